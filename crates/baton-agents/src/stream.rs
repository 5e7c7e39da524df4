//! An agent CLI's JSON Lines stream read a line at a time into
//! [`AgentEvent`]s.
//!
//! [`StreamParser`] does what is the same for every CLI (line numbers,
//! JSON decoding, saying a session once, remembering the latest assistant
//! message) and hands each decoded line to the CLI's adapter
//! ([`AgentCli::parse_line`]). A line that is not JSON, or not what the
//! CLI is known to write, becomes an [`AgentEvent::Warning`]; it never
//! stops the parse. Pure: lines in, events out.

use crate::{AgentEvent, Cli, Seen};
use baton_core::agent_stream::shorten;
use serde_json::Value;

/// Reads one CLI's stream a line at a time.
#[derive(Clone)]
pub struct StreamParser {
    cli: Cli,
    line_no: usize,
    /// The assistant's latest message (some CLIs stream it in deltas).
    last_text: String,
    session: Option<String>,
    /// Tool calls still without their result: (id, "name summary").
    open_calls: Vec<(String, String)>,
}

impl StreamParser {
    pub fn new(cli: Cli) -> StreamParser {
        StreamParser {
            cli,
            line_no: 0,
            last_text: String::new(),
            session: None,
            open_calls: Vec::new(),
        }
    }

    /// The events of one line (without its newline).
    pub fn line(&mut self, line: &str) -> Vec<AgentEvent> {
        self.line_no += 1;
        let line = line.trim();
        if line.is_empty() {
            return Vec::new();
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return vec![AgentEvent::Warning {
                    message: format!(
                        "{} output line {} is not JSON ({e}): {}",
                        self.cli.name(),
                        self.line_no,
                        shorten(line, 80)
                    ),
                }];
            }
        };
        let seen = Seen {
            last_text: &self.last_text,
            open_calls: &self.open_calls,
        };
        let mut out = self.cli.parse_line(&v, &seen);
        // Some CLIs name their session on every event: say it once (again
        // only if it changes, e.g. a resume that started a new one).
        out.retain(|e| match e {
            AgentEvent::SessionStarted { native_id } => {
                let new = self.session.as_deref() != Some(native_id.as_str());
                self.session = Some(native_id.clone());
                new
            }
            _ => true,
        });
        for e in &out {
            match e {
                AgentEvent::AssistantText { text } if self.cli.text_in_deltas() => {
                    self.last_text.push_str(text)
                }
                AgentEvent::AssistantText { text } => self.last_text = text.clone(),
                AgentEvent::ToolCall { id, name, summary } => {
                    self.last_text.clear();
                    self.open_calls
                        .push((id.clone(), format!("{name} {summary}")));
                }
                AgentEvent::ToolResult { id, .. } => self.open_calls.retain(|(c, _)| c != id),
                _ => {}
            }
        }
        if out.is_empty() && v.get("type").is_none() {
            out.push(AgentEvent::Warning {
                message: format!(
                    "{} output line {} has no type: {}",
                    self.cli.name(),
                    self.line_no,
                    shorten(line, 80)
                ),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clis::Claude;

    #[test]
    fn a_malformed_line_is_a_warning_and_parsing_goes_on() {
        let mut p = StreamParser::new(&Claude);
        let w = p.line("{not json");
        assert!(matches!(&w[..], [AgentEvent::Warning { message }] if message.contains("line 1")));
        let ok = p.line(r#"{"type":"system","subtype":"init","session_id":"s-1"}"#);
        assert_eq!(
            ok,
            vec![AgentEvent::SessionStarted {
                native_id: "s-1".into()
            }]
        );
        assert!(p.line("   ").is_empty());
        assert!(matches!(&p.line("[1,2]")[..], [AgentEvent::Warning { .. }]));
    }
}
