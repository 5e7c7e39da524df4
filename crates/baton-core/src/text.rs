//! Text from outside baton (agents' summaries and messages, webhook
//! payloads, task descriptions, labels) made safe for a terminal: control
//! characters and Unicode bidi controls become visible escapes, so that
//! what was sent can neither drive the terminal (`ESC ]52` writes the
//! clipboard, CSI sequences move the cursor and rewrite the screen) nor
//! reorder what a person reads (U+202E), yet stays visible as what it was.
//! And a long text is clipped to a preview of bounded size.
//!
//! Only these characters change; every other one, the backslash included,
//! is kept, so text without them comes back as it was (borrowed).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is: a C0 control, DEL, a
/// C1 control (U+0080–U+009F, which some terminals obey like `ESC x`), or
/// a bidi control (U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069).
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1f'
            | '\x7f'
            | '\u{80}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// Text shown on several lines: every unsafe character escaped, except
/// newline and tab, which are kept.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_with(s, true)
}

/// Text shown on one line (a table cell, a one-line summary): every unsafe
/// character escaped, newline (`\n`) and tab (`\t`) too.
pub fn escape_line(s: &str) -> Cow<'_, str> {
    escape_with(s, false)
}

fn escape_with(s: &str, multi_line: bool) -> Cow<'_, str> {
    let keep = |c: char| !is_unsafe(c) || (multi_line && (c == '\n' || c == '\t'));
    if s.chars().all(keep) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if keep(c) {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Text that carries SGR colour sequences of its own (`ESC [ 1;31 m`, as a
/// terminal-aware printer paints status words) and may carry anything
/// else: those sequences are kept, every other unsafe character is escaped
/// as [`escape`] does. Colour is all an SGR sequence can change.
pub fn escape_keeping_sgr(s: &str) -> Cow<'_, str> {
    if !s.contains(|c: char| is_unsafe(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b'
            && let Some(n) = sgr_len(rest)
        {
            out.push_str(&rest[..n]);
            rest = &rest[n..];
            continue;
        }
        if is_unsafe(c) && c != '\n' && c != '\t' {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// The length of the SGR sequence `ESC [ digits-and-semicolons m` that `s`
/// starts with, if it starts with one.
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\x1b[")?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write;
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// The first `max_chars` characters of `s`, and how many bytes were left
/// out after them (0 when `s` is that short).
pub fn clip(s: &str, max_chars: usize) -> (&str, usize) {
    match s.char_indices().nth(max_chars) {
        Some((at, _)) => (&s[..at], s.len() - at),
        None => (s, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escapes_are_visible_and_say_what_was_sent() {
        assert_eq!(
            escape("a\x1b]52;c;aGk=\x07b"),
            "a\\x1b]52;c;aGk=\\x07b",
            "the clipboard write is shown, not done"
        );
        assert_eq!(escape("\x1b[2J\x1b[H"), "\\x1b[2J\\x1b[H");
        assert_eq!(escape("x\u{9b}31m"), "x\\u{9b}31m");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(
            escape("\u{2066}\u{61c}\u{200f}"),
            "\\u{2066}\\u{61c}\\u{200f}"
        );
        assert_eq!(escape("del\x7f"), "del\\x7f");
        assert_eq!(escape("one\ntwo\tx\r\n"), "one\ntwo\tx\\r\n");
        assert_eq!(escape_line("one\ntwo\tx\r"), "one\\ntwo\\tx\\r");
        assert_eq!(escape("naïve — ok \\x1b"), "naïve — ok \\x1b");
    }

    #[test]
    fn sgr_colour_is_kept_and_nothing_else() {
        assert_eq!(
            escape_keeping_sgr("\x1b[1;31merror:\x1b[0m \x1b]52;c;x\x07 \x1b[2J"),
            "\x1b[1;31merror:\x1b[0m \\x1b]52;c;x\\x07 \\x1b[2J"
        );
        assert_eq!(escape_keeping_sgr("\x1b["), "\\x1b[");
        assert_eq!(escape_keeping_sgr("a\u{202e}\nb"), "a\\u{202e}\nb");
    }

    #[test]
    fn clip_counts_characters_and_reports_bytes() {
        assert_eq!(clip("héllo", 10), ("héllo", 0));
        assert_eq!(clip("héllo", 2), ("hé", 3));
        assert_eq!(clip("", 0), ("", 0));
    }

    /// Any character, with the unsafe ones and the escapes' own characters
    /// well represented.
    fn text() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            any::<char>(),
            prop::char::range('\0', '\u{a0}'),
            prop::sample::select(vec![
                '\x1b', '[', ']', '\\', 'm', ';', '\n', '\t', '\r', '\u{202e}', '\u{2069}',
                '\u{61c}', '\u{200e}', '\u{9b}',
            ]),
        ];
        prop::collection::vec(c, 0..64).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn no_unsafe_character_survives(s in text()) {
            prop_assert!(!escape_line(&s).chars().any(is_unsafe));
            prop_assert!(!escape(&s).chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t'));
            // What escape_keeping_sgr lets through is whole SGR sequences.
            let kept = escape_keeping_sgr(&s);
            let mut rest: &str = &kept;
            while let Some(c) = rest.chars().next() {
                match sgr_len(rest) {
                    Some(n) if c == '\x1b' => rest = &rest[n..],
                    _ => {
                        prop_assert!(!is_unsafe(c) || c == '\n' || c == '\t', "{:?}", kept);
                        rest = &rest[c.len_utf8()..];
                    }
                }
            }
        }

        #[test]
        fn safe_text_is_unchanged_and_escaping_twice_changes_nothing(s in text()) {
            let safe: String = s.chars().filter(|c| !is_unsafe(*c)).collect();
            prop_assert!(matches!(escape_line(&safe), Cow::Borrowed(_)));
            prop_assert_eq!(escape(&safe), safe.as_str());
            prop_assert_eq!(escape_keeping_sgr(&safe), safe.as_str());
            let once = escape_line(&s).into_owned();
            prop_assert_eq!(escape_line(&once), once.as_str());
            let once = escape(&s).into_owned();
            prop_assert_eq!(escape(&once), once.as_str());
        }

        #[test]
        fn clip_keeps_a_prefix_and_counts_the_rest(s in text(), n in 0usize..80) {
            let (head, more) = clip(&s, n);
            prop_assert!(s.starts_with(head));
            prop_assert_eq!(head.len() + more, s.len());
            prop_assert_eq!(head.chars().count(), n.min(s.chars().count()));
        }
    }
}
