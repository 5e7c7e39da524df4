//! `baton-sim --seeds N [--from S]`: the simulator's campaign. Runs seeds
//! S..S+N, prints progress and the figures line, and exits 1 on the first
//! break, naming the seed and how to replay it.

use baton_sim::{Campaign, Config, replay_command, run};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut seeds: u64 = 10_000;
    let mut from: u64 = 0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().and_then(|v| v.parse::<u64>().ok());
        match (a.as_str(), value) {
            ("--seeds", Some(v)) => seeds = v,
            ("--from", Some(v)) => from = v,
            _ => {
                eprintln!("usage: baton-sim [--seeds N] [--from SEED]");
                return ExitCode::from(2);
            }
        }
    }
    let cfg = Config::default();
    let started = std::time::Instant::now();
    let mut c = Campaign::default();
    for seed in from..from.saturating_add(seeds) {
        let r = run(seed, &cfg);
        let broke = !r.breaks.is_empty();
        c.add(r);
        if broke {
            break;
        }
        if c.seeds.is_multiple_of(1000) {
            eprintln!(
                "{} seeds, {:.0} s",
                c.seeds,
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!("{}", c.figures());
    if let Some(r) = &c.first_break {
        eprintln!("seed {} breaks: {:?}", r.seed, r.breaks);
        eprintln!("replay it: {}", replay_command(r.seed, cfg.broken));
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
