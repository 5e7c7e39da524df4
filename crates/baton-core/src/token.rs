//! Secrets that open `baton serve`: the person's API token (judged for
//! strength before the server starts) and the capability tokens baton
//! hands the agents it starts (stored only as their SHA-256 digest, each
//! scoped to one phase attempt or one agent instance, and valid only while
//! that attempt runs or that instance lives). Randomness is the caller's;
//! this module only judges, hashes and decides.

use crate::TaskId;
use crate::instance::InstanceId;
use crate::state::{PhaseStatus, TaskState};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a token must carry, in bits, to be trusted beyond loopback and as
/// an API token at all: 32 random bytes.
pub const MIN_TOKEN_BITS: f64 = 256.0;

/// Every capability token starts with this, so a leaked one is recognised
/// (by people, by secret scanners, by baton's redaction) and never taken
/// for the person's API token.
pub const CAPABILITY_PREFIX: &str = "batoncap_";

/// Why a token is refused, said to the person who set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Weak {
    Blank,
    /// Spaces, tabs or control characters: a header trims or mangles them.
    Unprintable,
    /// The estimate, in whole bits.
    TooGuessable(u32),
}

impl std::fmt::Display for Weak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Weak::Blank => write!(f, "it is blank"),
            Weak::Unprintable => write!(f, "it holds spaces or control characters"),
            Weak::TooGuessable(bits) => write!(
                f,
                "it carries about {bits} bits of entropy, and at least {} are needed (32 random bytes)",
                MIN_TOKEN_BITS as u32
            ),
        }
    }
}

/// Judges a token a person chose: refused when blank, unprintable, or
/// estimated below [`MIN_TOKEN_BITS`]. The estimate is generous to random
/// strings and hard on words: each character counts for the alphabet its
/// kind belongs to (hex digits alone count 4 bits, letters and digits
/// about 6), and a token made of few distinct characters counts as if
/// written in only those.
pub fn judge(token: &str) -> Result<(), Weak> {
    if token.trim().is_empty() {
        return Err(Weak::Blank);
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Weak::Unprintable);
    }
    let bits = estimate_bits(token);
    if bits < MIN_TOKEN_BITS {
        return Err(Weak::TooGuessable(bits as u32));
    }
    Ok(())
}

/// Bits of entropy `token` would carry if each character were drawn at
/// random from the alphabet its characters suggest.
pub fn estimate_bits(token: &str) -> f64 {
    let chars: Vec<char> = token.chars().collect();
    if chars.is_empty() {
        return 0.0;
    }
    let hex = chars.iter().all(|c| c.is_ascii_hexdigit());
    let mut alphabet = 0u32;
    if hex {
        alphabet = 16;
    } else {
        if chars.iter().any(|c| c.is_ascii_lowercase()) {
            alphabet += 26;
        }
        if chars.iter().any(|c| c.is_ascii_uppercase()) {
            alphabet += 26;
        }
        if chars.iter().any(|c| c.is_ascii_digit()) {
            alphabet += 10;
        }
        if chars.iter().any(|c| c.is_ascii_punctuation()) {
            alphabet += 32;
        }
        if chars.iter().any(|c| !c.is_ascii()) {
            alphabet += 100;
        }
    }
    let mut distinct: Vec<char> = chars.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let d = distinct.len() as f64;
    // "aaaa…" or "abab…" are not drawn from a large alphabet: a token of
    // few distinct characters counts for little, however long.
    if d < (f64::from(alphabet) / 2.0).min(10.0) {
        return d * d.max(2.0).log2();
    }
    chars.len() as f64 * f64::from(alphabet).log2()
}

/// The digest a token is stored and looked up by (hex SHA-256).
pub fn digest(token: &str) -> String {
    digest_bytes(token.as_bytes())
}

/// Hex SHA-256 of `bytes` (a webhook body, remembered against replays).
pub fn digest_bytes(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A capability token from 32 random bytes.
pub fn capability_token(random: &[u8; 32]) -> String {
    let mut s = String::from(CAPABILITY_PREFIX);
    for b in random {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// What one capability lets its holder be: the agent of one phase attempt
/// (its summary, blocker and checkpoints go to that attempt's files) and,
/// when the phase runs an agent instance, that instance (the review
/// loop's tools, its team membership).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    pub task: Option<TaskId>,
    pub phase: Option<String>,
    pub iteration: Option<u32>,
    pub attempt: Option<u32>,
    pub instance: Option<InstanceId>,
}

impl Scope {
    pub fn attempt(task: TaskId, phase: &str, iteration: u32, attempt: u32) -> Scope {
        Scope {
            task: Some(task),
            phase: Some(phase.to_string()),
            iteration: Some(iteration),
            attempt: Some(attempt),
            instance: None,
        }
    }

    pub fn instance(id: InstanceId) -> Scope {
        Scope {
            task: None,
            phase: None,
            iteration: None,
            attempt: None,
            instance: Some(id),
        }
    }

    /// Whether the phase attempt it names still runs in `state` (the
    /// task's projection as stored): the phase in progress at that
    /// iteration and attempt. A scope without an attempt is not judged
    /// here.
    pub fn attempt_runs(&self, state: &TaskState) -> bool {
        let (Some(phase), Some(iteration), Some(attempt)) =
            (&self.phase, self.iteration, self.attempt)
        else {
            return false;
        };
        state.phases.iter().any(|p| {
            p.id.as_str() == phase
                && p.status == PhaseStatus::InProgress
                && p.iteration == iteration
                && p.attempt == attempt
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tokens_people_make_with_the_usual_tools_pass() {
        // openssl rand -hex 32, openssl rand -base64 32, a capability.
        let hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        assert_eq!(judge(hex), Ok(()));
        assert_eq!(
            judge("q1Vb9yQ0m3ZlH8r2T6uW4xA7cE5dF0gJ1kL3nP9sR2o="),
            Ok(())
        );
        let random: [u8; 32] = *b"\x9f\x86\xd0\x81\x88\x4c\x7d\x65\x9a\x2f\xea\xa0\xc5\x5a\xd0\x15\xa3\xbf\x4f\x1b\x2b\x0b\x82\x2c\xd1\x5d\x6c\x15\xb0\xf0\x0a\x08";
        assert_eq!(judge(&capability_token(&random)), Ok(()));
    }

    #[test]
    fn weak_tokens_are_refused_with_why() {
        assert_eq!(judge(" "), Err(Weak::Blank));
        assert_eq!(judge(""), Err(Weak::Blank));
        assert_eq!(judge("a b"), Err(Weak::Unprintable));
        assert!(matches!(judge("s3cret"), Err(Weak::TooGuessable(_))));
        assert!(matches!(
            judge("correct-horse-battery-staple"),
            Err(Weak::TooGuessable(_))
        ));
        // Long but made of two characters.
        assert!(matches!(
            judge(&"ab".repeat(200)),
            Err(Weak::TooGuessable(_))
        ));
        // 16 random bytes in hex: 128 bits.
        assert_eq!(
            judge("9f86d081884c7d659a2feaa0c55ad015"),
            Err(Weak::TooGuessable(128))
        );
    }

    #[test]
    fn digests_are_hex_sha256() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    proptest! {
        #[test]
        fn capability_tokens_are_recognisable_and_carry_every_byte(bytes in proptest::array::uniform32(any::<u8>())) {
            let t = capability_token(&bytes);
            prop_assert!(t.starts_with(CAPABILITY_PREFIX));
            prop_assert!(t[CAPABILITY_PREFIX.len()..].chars().all(|c| c.is_ascii_hexdigit()));
            prop_assert_eq!(t.len(), CAPABILITY_PREFIX.len() + 64);
        }
    }
}
