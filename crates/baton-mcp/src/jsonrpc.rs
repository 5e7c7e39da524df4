//! What comes in is screened before the MCP SDK sees it, so that every
//! malformed message gets the JSON-RPC error the specification names
//! instead of silence or "method not found": a line or body that is not
//! JSON is -32700 (Parse error), JSON that is no JSON-RPC 2.0 message is
//! -32600 (Invalid Request), and a `tools/call` whose params or arguments
//! are not objects is -32602 (Invalid params). Pure, and fuzzed
//! (`fuzz/fuzz_targets/mcp_dispatch.rs`); both transports use it.

use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// What to do with one incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Screened {
    /// Hand it to the SDK as it is.
    Forward,
    /// Answer with this JSON-RPC error response, and nothing else.
    Reply(Value),
    /// A malformed notification or response: JSON-RPC answers nothing.
    Drop,
}

/// A JSON-RPC error response.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Screens one message (a stdio line, an HTTP body).
pub fn screen(bytes: &[u8]) -> Screened {
    let v: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Screened::Reply(error(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the message is not JSON ({e})"),
            ));
        }
    };
    let Value::Object(m) = &v else {
        let what = if v.is_array() {
            "a batch (MCP takes one message at a time)"
        } else {
            "not a JSON-RPC message object"
        };
        return Screened::Reply(error(
            Value::Null,
            INVALID_REQUEST,
            &format!("Invalid Request: {what}"),
        ));
    };
    // The id, when it is one JSON-RPC allows (else the error has none).
    let id = match m.get("id") {
        Some(i @ (Value::String(_) | Value::Number(_))) => Some(i.clone()),
        _ => None,
    };
    let invalid = |message: &str| {
        Screened::Reply(error(
            id.clone().unwrap_or(Value::Null),
            INVALID_REQUEST,
            &format!("Invalid Request: {message}"),
        ))
    };
    if m.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    if m.contains_key("id") && id.is_none() {
        return invalid("\"id\" must be a string or a number");
    }
    let Some(method) = m.get("method") else {
        // A response (to a request of the server's): its own rules.
        if id.is_some() && (m.contains_key("result") || m.contains_key("error")) {
            return Screened::Forward;
        }
        return invalid(
            "a message needs \"method\" (a request or notification) or \"result\"/\"error\" (a response)",
        );
    };
    let Some(method) = method.as_str() else {
        return if id.is_some() {
            invalid("\"method\" must be a string")
        } else {
            Screened::Drop
        };
    };
    let params = m.get("params");
    let bad_params = |message: String| match &id {
        Some(i) => Screened::Reply(error(
            i.clone(),
            INVALID_PARAMS,
            &format!("Invalid params: {message}"),
        )),
        None => Screened::Drop,
    };
    if params.is_some_and(|p| !p.is_object() && !p.is_array() && !p.is_null()) {
        return bad_params(format!("the params of {method} must be an object"));
    }
    if method == "tools/call" {
        let Some(p) = params.and_then(Value::as_object) else {
            return bad_params("tools/call needs params {name, arguments}".into());
        };
        if !p.get("name").is_some_and(Value::is_string) {
            return bad_params("tools/call needs the tool's \"name\", a string".into());
        }
        if p.get("arguments")
            .is_some_and(|a| !a.is_object() && !a.is_null())
        {
            return bad_params(format!(
                "the arguments of {} must be an object of named values",
                p["name"].as_str().unwrap_or("")
            ));
        }
    }
    Screened::Forward
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: Screened) -> (i64, Value) {
        match s {
            Screened::Reply(v) => (v["error"]["code"].as_i64().unwrap(), v["id"].clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_malformed_message_gets_its_code() {
        assert_eq!(code(screen(b"not json")), (PARSE_ERROR, Value::Null));
        assert_eq!(code(screen(b"{\"jsonrpc\":")), (PARSE_ERROR, Value::Null));
        assert_eq!(code(screen(b"[1,2]")), (INVALID_REQUEST, Value::Null));
        assert_eq!(code(screen(b"3")), (INVALID_REQUEST, Value::Null));
        assert_eq!(
            code(screen(br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#)),
            (INVALID_REQUEST, json!(7))
        );
        assert_eq!(
            code(screen(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#)),
            (INVALID_REQUEST, Value::Null)
        );
        assert_eq!(
            code(screen(
                br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"checkpoint","arguments":"x"}}"#
            )),
            (INVALID_PARAMS, json!("a"))
        );
        assert_eq!(
            code(screen(
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[]}"#
            )),
            (INVALID_PARAMS, json!(2))
        );
        assert_eq!(
            code(screen(
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#
            )),
            (INVALID_PARAMS, json!(2))
        );
    }

    #[test]
    fn good_messages_and_malformed_notifications_pass_or_go_quietly() {
        for ok in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"checkpoint","arguments":{"note":"x"}}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ] {
            assert_eq!(screen(ok), Screened::Forward);
        }
        assert_eq!(
            screen(
                br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":"y"}}"#
            ),
            Screened::Drop
        );
    }
}
