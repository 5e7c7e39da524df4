//! The four wire protocols' answers, built from a scripted [`Reply`]: the
//! Anthropic Messages API, the OpenAI Responses and Chat Completions APIs
//! and the Gemini API, streamed (SSE) or whole, and their error bodies.
//! Pure: a reply in, a body out.

use super::Reply;
use serde_json::{Value, json};

/// The protocol of a model request, from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    Anthropic,
    Responses,
    Chat,
    Gemini { stream: bool },
}

pub(super) fn reply_len(r: &Reply) -> usize {
    r.text.as_deref().map_or(0, str::len) + r.tool.as_ref().map_or(0, |t| t.args.to_string().len())
}

pub(super) struct Usage {
    pub(super) input: u64,
    pub(super) output: u64,
}

pub(super) enum Body {
    Json(Value),
    /// `(event name, data)`; data is JSON text or `[DONE]`.
    Sse(Vec<(Option<String>, String)>),
}

/// An HTTP error in the shape each protocol uses (Anthropic's `{type:
/// "error", error: {type, message}}`, OpenAI's `{error: {message, type,
/// code}}`, Gemini's `{error: {code, message, status}}`), all in one body.
pub(super) fn error_body(wire: Wire, status: u16) -> Value {
    let (kind, google) = match status {
        401 => ("authentication_error", "UNAUTHENTICATED"),
        429 => ("rate_limit_error", "RESOURCE_EXHAUSTED"),
        _ => ("api_error", "INTERNAL"),
    };
    let message = format!("scripted failure: HTTP {status}");
    match wire {
        Wire::Gemini { .. } => {
            json!({ "error": { "code": status, "message": message, "status": google } })
        }
        _ => json!({ "type": "error",
            "error": { "type": kind, "message": message, "code": status, "status": google } }),
    }
}

fn sse(event: &str, data: Value) -> (Option<String>, String) {
    (Some(event.into()), data.to_string())
}

pub(super) fn anthropic(r: &Reply, u: &Usage, model: &str, id: &str, stream: bool) -> Body {
    let tool_id = format!("toolu_{id}");
    let stop = if r.tool.is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    if !stream {
        let mut content = Vec::new();
        if let Some(t) = &r.text {
            content.push(json!({ "type": "text", "text": t }));
        }
        if let Some(t) = &r.tool {
            content.push(
                json!({ "type": "tool_use", "id": tool_id, "name": t.name, "input": t.args }),
            );
        }
        return Body::Json(json!({
            "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": { "input_tokens": u.input, "output_tokens": u.output }
        }));
    }
    let mut ev = vec![sse(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": u.input, "output_tokens": 1 } } }),
    )];
    let mut index = 0;
    if let Some(t) = &r.text {
        ev.push(sse("content_block_start", json!({ "type": "content_block_start", "index": index, "content_block": { "type": "text", "text": "" } })));
        ev.push(sse("content_block_delta", json!({ "type": "content_block_delta", "index": index, "delta": { "type": "text_delta", "text": t } })));
        ev.push(sse(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
        index += 1;
    }
    if let Some(t) = &r.tool {
        ev.push(sse(
            "content_block_start",
            json!({ "type": "content_block_start", "index": index,
            "content_block": { "type": "tool_use", "id": tool_id, "name": t.name, "input": {} } }),
        ));
        ev.push(sse(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": index,
            "delta": { "type": "input_json_delta", "partial_json": t.args.to_string() } }),
        ));
        ev.push(sse(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
    }
    ev.push(sse(
        "message_delta",
        json!({ "type": "message_delta", "delta": { "stop_reason": stop, "stop_sequence": null },
                "usage": { "output_tokens": u.output } }),
    ));
    ev.push(sse("message_stop", json!({ "type": "message_stop" })));
    Body::Sse(ev)
}

pub(super) fn responses(r: &Reply, u: &Usage, model: &str, id: &str) -> Body {
    let resp_id = format!("resp_{id}");
    let mut items = Vec::new();
    if let Some(t) = &r.text {
        items.push(json!({ "type": "message", "id": format!("msg_{id}"), "status": "completed", "role": "assistant",
            "content": [{ "type": "output_text", "text": t, "annotations": [] }] }));
    }
    if let Some(t) = &r.tool {
        let mut call = json!({ "type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
            "name": t.name, "arguments": t.args.to_string(), "status": "completed" });
        // A tool Codex offers in a namespace (an MCP server's `mcp__SERVER`,
        // its own agents' `multi_agent_v1` or `collaboration`) is scripted
        // as `NAMESPACE__NAME` and called as that namespace's function.
        if let Some((ns, name)) = t.name.rsplit_once("__")
            && (ns.starts_with("mcp__") || ns == "multi_agent_v1" || ns == "collaboration")
        {
            call["namespace"] = json!(ns);
            call["name"] = json!(name);
        }
        items.push(call);
    }
    let response = |status: &str, output: Value| {
        json!({ "id": resp_id, "object": "response", "created_at": 0, "status": status, "model": model,
            "output": output,
            "usage": { "input_tokens": u.input, "input_tokens_details": { "cached_tokens": 0 },
                       "output_tokens": u.output, "output_tokens_details": { "reasoning_tokens": 0 },
                       "total_tokens": u.input + u.output } })
    };
    let mut seq = 0u64;
    let mut ev = Vec::new();
    let mut push = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        ev.push(sse(kind, data));
    };
    push(
        "response.created",
        json!({ "response": response("in_progress", json!([])) }),
    );
    for (i, item) in items.iter().enumerate() {
        let mut started = item.clone();
        started["status"] = json!("in_progress");
        if item["type"] == "message" {
            started["content"] = json!([]);
            push(
                "response.output_item.added",
                json!({ "output_index": i, "item": started }),
            );
            let text = item["content"][0]["text"].clone();
            push(
                "response.content_part.added",
                json!({ "item_id": item["id"], "output_index": i, "content_index": 0,
                "part": { "type": "output_text", "text": "", "annotations": [] } }),
            );
            push(
                "response.output_text.delta",
                json!({ "item_id": item["id"], "output_index": i, "content_index": 0, "delta": text }),
            );
            push(
                "response.output_text.done",
                json!({ "item_id": item["id"], "output_index": i, "content_index": 0, "text": text }),
            );
            push(
                "response.content_part.done",
                json!({ "item_id": item["id"], "output_index": i, "content_index": 0,
                "part": item["content"][0] }),
            );
        } else {
            started["arguments"] = json!("");
            push(
                "response.output_item.added",
                json!({ "output_index": i, "item": started }),
            );
            push(
                "response.function_call_arguments.delta",
                json!({ "item_id": item["id"], "output_index": i, "delta": item["arguments"] }),
            );
            push(
                "response.function_call_arguments.done",
                json!({ "item_id": item["id"], "output_index": i, "arguments": item["arguments"] }),
            );
        }
        push(
            "response.output_item.done",
            json!({ "output_index": i, "item": item }),
        );
    }
    push(
        "response.completed",
        json!({ "response": response("completed", json!(items)) }),
    );
    Body::Sse(ev)
}

pub(super) fn chat(r: &Reply, u: &Usage, model: &str, id: &str, stream: bool) -> Body {
    let finish = if r.tool.is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    let usage = json!({ "prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output });
    let tool_calls = r.tool.as_ref().map(|t| {
        json!([{ "index": 0, "id": format!("call_{id}"), "type": "function",
                 "function": { "name": t.name, "arguments": t.args.to_string() } }])
    });
    if !stream {
        let mut message = json!({ "role": "assistant", "content": r.text });
        if let Some(tc) = &tool_calls {
            message["tool_calls"] = tc.clone();
        }
        return Body::Json(
            json!({ "id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": 0, "model": model,
            "choices": [{ "index": 0, "message": message, "finish_reason": finish }], "usage": usage }),
        );
    }
    let chunk = |delta: Value, finish: Option<&str>| {
        (None, json!({ "id": format!("chatcmpl-{id}"), "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] }).to_string())
    };
    let mut ev = vec![chunk(json!({ "role": "assistant", "content": "" }), None)];
    if let Some(t) = &r.text {
        ev.push(chunk(json!({ "content": t }), None));
    }
    if let Some(tc) = tool_calls {
        ev.push(chunk(json!({ "tool_calls": tc }), None));
    }
    ev.push(chunk(json!({}), Some(finish)));
    ev.push((None, json!({ "id": format!("chatcmpl-{id}"), "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [], "usage": usage }).to_string()));
    ev.push((None, "[DONE]".into()));
    Body::Sse(ev)
}

pub(super) fn gemini(r: &Reply, u: &Usage, model: &str, _id: &str, stream: bool) -> Body {
    let mut parts = Vec::new();
    if let Some(t) = &r.text {
        parts.push(json!({ "text": t }));
    }
    if let Some(t) = &r.tool {
        parts.push(json!({ "functionCall": { "name": t.name, "args": t.args } }));
    }
    let v = json!({
        "candidates": [{ "content": { "role": "model", "parts": parts }, "finishReason": "STOP", "index": 0 }],
        "usageMetadata": { "promptTokenCount": u.input, "candidatesTokenCount": u.output, "totalTokenCount": u.input + u.output },
        "modelVersion": model
    });
    if stream {
        Body::Sse(vec![(None, v.to_string())])
    } else {
        Body::Json(v)
    }
}
