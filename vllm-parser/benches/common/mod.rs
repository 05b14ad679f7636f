//! What both benches share: timing in the thread's CPU time, vLLM's side through
//! `scripts/bench_vllm.py`, and the comparison table's rows.
//!
//! Both sides time with the running thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`
//! here, `time.thread_time()` in the script) and keep the best of a few rounds, so
//! that other work on a shared machine does not inflate either side.

use std::hint::black_box;
use std::io::Write;
use std::process::{Command, Stdio};

use cpu_time::ThreadTime;

/// Rounds per measurement; the fastest is kept.
const ROUNDS: usize = 3;

/// Thread CPU seconds of one call of `run`, the best of [`ROUNDS`] rounds of about
/// `2 MB / bytes` calls each.
pub fn seconds_per_run<T>(bytes: usize, mut run: impl FnMut() -> T) -> f64 {
    let runs = (2_000_000 / bytes.max(1)).clamp(3, 2000);
    (0..ROUNDS)
        .map(|_| {
            let start = ThreadTime::now();
            for _ in 0..runs {
                black_box(run());
            }
            start.elapsed().as_secs_f64() / runs as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// vLLM's thread CPU seconds per run for each job line (`scripts/bench_vllm.py`'s
/// input), if the reference environment is there.
pub fn vllm_seconds(jobs: &[String]) -> Option<Vec<f64>> {
    let home = std::env::var("HOME").ok()?;
    let python = format!("{home}/.cache/vllm-reference/venv/bin/python");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench_vllm.py");
    let mut child = Command::new(python)
        .arg(script)
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    for job in jobs {
        writeln!(stdin, "{job}").ok()?;
    }
    drop(stdin);
    let out = child.wait_with_output().ok()?;
    let seconds: Option<Vec<f64>> = String::from_utf8(out.stdout)
        .ok()?
        .lines()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).ok()?;
            line.get("seconds_per_run")?.as_f64()
        })
        .collect();
    seconds.filter(|seconds| seconds.len() == jobs.len())
}

/// The comparison table's header.
pub fn print_header() {
    println!(
        "\n| family | ours MB/s (4-char chunks, 16 KB) | vLLM MB/s (token deltas) | ratio | 64 KB vs 1 KB per char (1-char chunks) |"
    );
    println!("|---|---|---|---|---|");
}

/// One row: `ours` and `theirs` are seconds per run on `bytes` of output, `growth`
/// the per-character cost at 64 KB over that at 1 KB.
pub fn print_row(name: &str, bytes: usize, ours: f64, theirs: Option<f64>, growth: f64) {
    let mb = bytes as f64 / 1e6;
    let (theirs, ratio) = match theirs {
        Some(seconds) => (
            format!("{:.2}", mb / seconds),
            format!("{:.0}x", seconds / ours),
        ),
        None => ("n/a".to_owned(), "n/a".to_owned()),
    };
    println!(
        "| {name} | {:.1} | {theirs} | {ratio} | {growth:.2}x |",
        mb / ours
    );
}
