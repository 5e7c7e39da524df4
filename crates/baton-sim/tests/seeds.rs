//! The simulator's test script: 500 seeds (`BATON_SIM_SEEDS=N` for more or
//! fewer), or one seed replayed with its trace (`BATON_SIM_SEED=N`, with
//! `BATON_SIM_BROKEN=unfenced` for a seed the broken store broke, or
//! `BATON_SIM_BROKEN=feedback-then-turn` for one the old feedback delivery
//! broke); that the same seed gives the same run; and that a deliberately
//! broken store, and the engine's old feedback delivery, are caught, and
//! their seeds replay to the same break. The figures line is
//! printed, and written to `$BATON_FIGURES_DIR/sim.txt` when that is set,
//! since a passing test's output is captured.

use baton_sim::{Broken, Campaign, Config, replay_command, run};
use std::path::PathBuf;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Where the figures go: `$BATON_FIGURES_DIR/sim.txt`, or nowhere when
/// it is not set.
fn figures_file() -> Option<PathBuf> {
    std::env::var_os("BATON_FIGURES_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("sim.txt"))
}

/// The broken mode a replay asks for (`BATON_SIM_BROKEN=unfenced` or
/// `feedback-then-turn`).
fn broken_from_env() -> Broken {
    match std::env::var("BATON_SIM_BROKEN").as_deref() {
        Ok("unfenced") => Broken::UnfencedStore,
        Ok("feedback-then-turn") => Broken::FeedbackThenTurn,
        _ => Broken::Nothing,
    }
}

#[test]
fn seeds_keep_every_invariant() {
    let cfg = Config {
        broken: broken_from_env(),
        ..Config::default()
    };
    if let Some(seed) = env_u64("BATON_SIM_SEED") {
        let r = run(seed, &cfg);
        for line in &r.trace {
            println!("{line}");
        }
        println!("seed {seed}: digest {}", r.digest);
        assert!(r.breaks.is_empty(), "seed {seed} breaks: {:?}", r.breaks);
        return;
    }
    let n = env_u64("BATON_SIM_SEEDS").unwrap_or(500);
    let started = std::time::Instant::now();
    let mut c = Campaign::default();
    for seed in 0..n {
        c.add(run(seed, &cfg));
    }
    let line = format!("{} ({:.1} s)", c.figures(), started.elapsed().as_secs_f64());
    println!("{line}");
    if let Some(file) = figures_file() {
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("figures folder");
        std::fs::write(&file, format!("{}\n", c.figures())).expect("figures written");
    }
    assert_eq!(c.seeds, n);
    assert!(c.invariants > c.steps, "invariants are checked every step");
    if let Some(r) = &c.first_break {
        panic!(
            "{line}\nseed {} breaks: {:?}\nreplay it: {}",
            r.seed,
            r.breaks,
            replay_command(r.seed, cfg.broken)
        );
    }
}

#[test]
fn a_seed_replays_to_the_same_trace() {
    let cfg = Config::default();
    // 142 runs the review loop: reviews merged back, their feedback
    // delivered with the turn that brings it, a pull request, a timeout,
    // a lost race, and a delivery decided on a read another process moved
    // past (its turn's task removed, the feedback left for the next tick).
    for seed in [5, 41, 142, 977] {
        let a = run(seed, &cfg);
        let b = run(seed, &cfg);
        assert_eq!(a.digest, b.digest, "seed {seed} ran twice differently");
        assert_eq!(a.trace, b.trace);
        assert!(a.trace.len() > 100, "a run does things: {}", a.trace.len());
    }
    let r = run(142, &cfg);
    for what in [
        "[merged_back]",
        "[feedback_delivered,turn]",
        "[pr_created]",
        "timed-out",
        "decided at",
        "removes turn",
    ] {
        assert!(
            r.trace.iter().any(|l| l.contains(what)),
            "seed 142 exercises the instances: no {what} in its trace"
        );
    }
    assert_ne!(run(3, &cfg).digest, run(4, &cfg).digest, "seeds differ");
}

#[test]
fn a_store_without_fencing_is_caught_and_its_seed_replays() {
    let cfg = Config {
        broken: Broken::UnfencedStore,
        ..Config::default()
    };
    let found = (0..200)
        .map(|seed| run(seed, &cfg))
        .find(|r| !r.breaks.is_empty());
    let r = found.expect("200 seeds find a store that lets a stale writer in");
    println!(
        "broken store caught at seed {}: {:?}\nreplay: {}",
        r.seed,
        r.breaks,
        replay_command(r.seed, cfg.broken)
    );
    let again = run(r.seed, &cfg);
    assert_eq!(again.breaks, r.breaks, "the seed replays to the same break");
    assert_eq!(again.digest, r.digest);
    assert!(
        run(r.seed, &Config::default()).breaks.is_empty(),
        "the same seed on the real store keeps every invariant"
    );
}

/// The race the simulator found in the engine's feedback delivery: busy
/// judged once for every review, the delivery and the turn journaled
/// apart, so two reviews' feedback (or two processes) started two turns of
/// one agent at once. The old way is still caught, its seed replays to the
/// same break, and the engine's way keeps every invariant on that seed.
#[test]
fn the_old_feedback_delivery_is_caught_and_its_seed_replays() {
    let cfg = Config {
        broken: Broken::FeedbackThenTurn,
        ..Config::default()
    };
    let overlap = |r: &baton_sim::Report| {
        r.breaks
            .iter()
            .any(|b| b.contains("started while its turns"))
    };
    let found = (0..SEARCHED_FOR_THE_OLD_RACE)
        .map(|seed| run(seed, &cfg))
        .find(|r| overlap(r));
    let r = found.unwrap_or_else(|| {
        panic!("{SEARCHED_FOR_THE_OLD_RACE} seeds find two turns of one agent running at once")
    });
    println!(
        "the old feedback delivery caught at seed {}: {:?}\nreplay: {}",
        r.seed,
        r.breaks,
        replay_command(r.seed, cfg.broken)
    );
    let again = run(r.seed, &cfg);
    assert_eq!(again.breaks, r.breaks, "the seed replays to the same break");
    assert_eq!(again.digest, r.digest);
    let fixed = run(r.seed, &Config::default());
    assert!(
        fixed.breaks.is_empty(),
        "the same seed with the engine's delivery keeps every invariant: {:?}",
        fixed.breaks
    );
}

/// How many seeds the old feedback delivery is searched over.
const SEARCHED_FOR_THE_OLD_RACE: u64 = 300;
