//! Runs the scripted model server by hand, for trying a real agent CLI
//! against it outside the tests (a terminal UI in tmux, a new flag).
//!
//! ```sh
//! BATON_AGENT_CLIS=… BATON_AGENT_CLIS_CACHE=… cargo run -p baton-testkit \
//!     --example serve_model -- CLI HOME [REPLY…]
//! ```
//!
//! It writes the files CLI reads into HOME (as the tests do), prints the
//! shell lines that set its environment, its model and extra arguments,
//! then answers each model request with the next REPLY (text; `tool:NAME
//! JSON` for a tool call) until it is killed.

use baton_testkit::agents::Agent;
use baton_testkit::model_server::{ModelServer, Reply};
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: serve_model CLI HOME [REPLY…]";
    let cli = args.next().expect(usage);
    let home = PathBuf::from(args.next().expect(usage));
    let agent = Agent::ALL
        .into_iter()
        .find(|a| a.program() == cli)
        .unwrap_or_else(|| panic!("unknown CLI {cli:?}"));
    let script: Vec<Reply> = args
        .map(|r| match r.strip_prefix("tool:") {
            Some(rest) => {
                let (name, json) = rest.split_once(' ').unwrap_or((rest, "{}"));
                Reply::tool(
                    name,
                    serde_json::from_str(json).expect("tool arguments: JSON"),
                )
            }
            None => Reply::text(&r),
        })
        .collect();
    std::fs::create_dir_all(&home).expect("HOME");
    let server = ModelServer::start(script);
    let setup = agent.setup(&server, &home);
    for (k, v) in &setup.env {
        println!("export {k}='{v}'");
    }
    println!("# model: {:?}", setup.model);
    println!("# args: {:?}", setup.args);
    println!("# serving on {}", server.base_url());
    let mut seen = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let requests = server.requests();
        for r in &requests[seen..] {
            eprintln!("{} {} turn={:?}", r.method, r.path, r.turn);
            if std::env::var_os("SERVE_MODEL_BODIES").is_some() {
                eprintln!("  {}", r.body);
            }
        }
        seen = requests.len();
    }
}
