//! `when` conditions: `flags.NAME`, `!flags.NAME`, `true`, `false`, joined by
//! `&&` and `||` (`&&` binds tighter).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Condition {
    Const(bool),
    Flag(String),
    Not(Box<Condition>),
    And(Vec<Condition>),
    Or(Vec<Condition>),
}

impl Condition {
    /// Parses a condition; `known_flag` says whether a flag is declared.
    pub fn parse(src: &str, known_flag: impl Fn(&str) -> bool) -> Result<Condition, String> {
        let mut ors = Vec::new();
        for or_part in src.split("||") {
            let mut ands = Vec::new();
            for term in or_part.split("&&") {
                ands.push(Self::term(term.trim(), &known_flag)?);
            }
            ors.push(if ands.len() == 1 {
                ands.pop().expect("one term")
            } else {
                Condition::And(ands)
            });
        }
        Ok(if ors.len() == 1 {
            ors.pop().expect("one term")
        } else {
            Condition::Or(ors)
        })
    }

    fn term(t: &str, known_flag: &impl Fn(&str) -> bool) -> Result<Condition, String> {
        if let Some(rest) = t.strip_prefix('!') {
            return Ok(Condition::Not(Box::new(Self::term(
                rest.trim(),
                known_flag,
            )?)));
        }
        if let Some(rest) = t.strip_prefix("not ") {
            return Ok(Condition::Not(Box::new(Self::term(
                rest.trim(),
                known_flag,
            )?)));
        }
        match t {
            "true" => return Ok(Condition::Const(true)),
            "false" => return Ok(Condition::Const(false)),
            "" => return Err("empty condition term".into()),
            _ => {}
        }
        match t.strip_prefix("flags.") {
            Some(name) if known_flag(name) => Ok(Condition::Flag(name.to_string())),
            Some(name) => Err(format!("unknown flag {name:?} (declare it under [flags])")),
            None => Err(format!(
                "cannot read {t:?}: write flags.NAME, !flags.NAME, true or false, joined by && or ||"
            )),
        }
    }

    pub fn eval(&self, flags: &BTreeMap<String, serde_json::Value>) -> bool {
        match self {
            Condition::Const(b) => *b,
            Condition::Flag(name) => flags.get(name).is_some_and(truthy),
            Condition::Not(c) => !c.eval(flags),
            Condition::And(cs) => cs.iter().all(|c| c.eval(flags)),
            Condition::Or(cs) => cs.iter().any(|c| c.eval(flags)),
        }
    }
}

/// The condition as a workflow writes it (`flags.a && !flags.b`), which
/// [`Condition::parse`] reads back to the same condition.
impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |f: &mut std::fmt::Formatter<'_>, cs: &[Condition], op: &str| {
            for (i, c) in cs.iter().enumerate() {
                if i > 0 {
                    write!(f, " {op} ")?;
                }
                write!(f, "{c}")?;
            }
            Ok(())
        };
        match self {
            Condition::Const(b) => write!(f, "{b}"),
            Condition::Flag(name) => write!(f, "flags.{name}"),
            Condition::Not(c) => write!(f, "!{c}"),
            Condition::And(cs) => join(f, cs, "&&"),
            Condition::Or(cs) => join(f, cs, "||"),
        }
    }
}

/// Whether a flag value counts as on: `true`, a non-zero number, or a string
/// other than "", "false", "0", "no", "off".
pub fn truthy(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        serde_json::Value::String(s) => !matches!(
            s.to_ascii_lowercase().as_str(),
            "" | "false" | "0" | "no" | "off"
        ),
        serde_json::Value::Null => false,
        _ => true,
    }
}

/// Reads a `--flag K=V` value: `true`/`false` become booleans, integers become
/// numbers, anything else stays a string.
pub fn parse_flag_value(v: &str) -> serde_json::Value {
    match v {
        "true" => serde_json::Value::Bool(true),
        "false" => serde_json::Value::Bool(false),
        _ => v
            .parse::<i64>()
            .map(serde_json::Value::from)
            .unwrap_or_else(|_| serde_json::Value::String(v.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_is_written_back_as_it_reads() {
        let known = |_: &str| true;
        for src in [
            "flags.a",
            "!flags.a",
            "true",
            "flags.a && !flags.b || flags.c",
            "not flags.x",
        ] {
            let c = Condition::parse(src, known).unwrap();
            assert_eq!(Condition::parse(&c.to_string(), known).unwrap(), c, "{src}");
        }
        assert_eq!(
            Condition::parse("flags.e2e && !flags.mvp", known)
                .unwrap()
                .to_string(),
            "flags.e2e && !flags.mvp"
        );
    }

    #[test]
    fn evaluates() {
        let known = |n: &str| n == "tests" || n == "mvp";
        let mut flags = BTreeMap::new();
        flags.insert("tests".to_string(), serde_json::Value::Bool(true));
        flags.insert("mvp".to_string(), serde_json::Value::Bool(false));
        let c = Condition::parse("flags.tests && !flags.mvp", known).unwrap();
        assert!(c.eval(&flags));
        let c = Condition::parse("flags.mvp || false", known).unwrap();
        assert!(!c.eval(&flags));
        assert!(
            Condition::parse("flags.nope", known)
                .unwrap_err()
                .contains("unknown flag")
        );
        assert!(Condition::parse("tests", known).is_err());
    }
}
