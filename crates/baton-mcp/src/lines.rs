//! MCP over newline-delimited JSON (`baton mcp`'s stdin and stdout): each
//! line is screened (`jsonrpc.rs`) before the SDK sees it, so a line that
//! is not JSON gets -32700 and a malformed message its own error instead
//! of silence; a line over [`MAX_LINE_BYTES`] is refused without being
//! held whole. One writer owns the output, so the SDK's answers and the
//! screen's never interleave within a line.

use crate::jsonrpc::{self, Screened};
use futures_util::{SinkExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest message taken: 8 MiB.
pub const MAX_LINE_BYTES: usize = 8 << 20;

type Lines = futures_channel::mpsc::UnboundedSender<Vec<u8>>;

/// Serves `server` on `input` and `output` until `input` ends.
pub async fn serve<R, W>(server: crate::tools::Baton, input: R, mut output: W) -> Result<(), String>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    let (lines, mut to_write) = futures_channel::mpsc::unbounded::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(mut line) = to_write.next().await {
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let (messages, incoming) = futures_channel::mpsc::unbounded::<ClientJsonRpcMessage>();
    let reader = tokio::spawn(read(input, messages, lines.clone()));
    let sink = Box::pin(futures_util::sink::unfold(
        lines.clone(),
        |lines: Lines, m: ServerJsonRpcMessage| async move {
            let line = serde_json::to_vec(&m).map_err(std::io::Error::other)?;
            lines.unbounded_send(line).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "output closed")
            })?;
            Ok::<_, std::io::Error>(lines)
        },
    ));
    drop(lines);
    let running = server
        .serve((sink.sink_map_err(std::io::Error::other), incoming))
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    let ended = running.waiting().await;
    reader.abort();
    let _ = writer.await;
    ended
        .map(|_| ())
        .map_err(|e| format!("the MCP server stopped: {e}"))
}

/// Reads lines, screens each, and passes on the good ones.
async fn read<R: AsyncRead + Unpin>(
    input: R,
    messages: futures_channel::mpsc::UnboundedSender<ClientJsonRpcMessage>,
    lines: Lines,
) {
    let mut input = BufReader::new(input);
    let reply = |v: Value| {
        let _ = lines.unbounded_send(serde_json::to_vec(&v).expect("JSON"));
    };
    loop {
        let (line, whole) = match next_line(&mut input).await {
            Ok(Some(l)) => l,
            Ok(None) | Err(_) => return,
        };
        if !whole {
            reply(jsonrpc::error(
                Value::Null,
                jsonrpc::INVALID_REQUEST,
                &format!("Invalid Request: a message of more than {MAX_LINE_BYTES} bytes"),
            ));
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match jsonrpc::screen(&line) {
            Screened::Reply(v) => reply(v),
            Screened::Drop => {}
            Screened::Forward => match serde_json::from_slice::<ClientJsonRpcMessage>(&line) {
                Ok(m) => {
                    if messages.unbounded_send(m).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let v: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
                    match v.get("id").filter(|i| i.is_string() || i.is_number()) {
                        Some(id) if v.get("method").is_some() => reply(jsonrpc::error(
                            id.clone(),
                            jsonrpc::INVALID_PARAMS,
                            &format!("Invalid params: {e}"),
                        )),
                        // A malformed notification or response: no answer.
                        _ => {}
                    }
                }
            },
        }
    }
}

/// The next line without its newline, and whether it was read whole
/// (a longer one is skipped to its end, never held); `None` at the end.
async fn next_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut whole = true;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty() || !whole).then_some((line, whole)));
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if whole {
            let part = &buf[..if done { take - 1 } else { take }];
            if line.len() + part.len() > MAX_LINE_BYTES {
                whole = false;
                line = Vec::new();
            } else {
                line.extend_from_slice(part);
            }
        }
        input.consume(take);
        if done {
            return Ok(Some((line, whole)));
        }
    }
}
