use super::*;
use crate::prompts::source::{
    condensed_source_text, leaf_source_text, SourceMessage, SourceSummary,
};
use crate::summarize::targets;
use crate::timeformat::Zone;

const PROSE: &str = "I think there are several ways we could approach this, and each one has tradeoffs in how complex it is and how long it would take to do properly. Let me walk through them one at a time so that we can compare them side by side.";

/// A realistic leaf chunk: goals, a failing tool run, the fix, decisions, filler.
pub(crate) fn leaf_fixture() -> String {
    let m =
        |t: &str, role: &str, c: &str| SourceMessage::new(&format!("2026-02-17 {t}:00"), role, c);
    let msgs = vec![
        m("09:00", "user", "We need to migrate the billing service from MySQL to Postgres before the March 3 deadline. Can you start with the schema?"),
        m("09:01", "assistant", &format!("Sure. {PROSE}")),
        m("09:02", "tool", "$ cat db/schema.sql\nCREATE TABLE invoices (id INT, amount_cents INT, customer_id INT);\nCREATE TABLE customers (id INT, email TEXT);"),
        m("09:05", "assistant", "The schema has two tables. I created migrations/001_init.sql with the Postgres DDL and changed amount_cents to BIGINT."),
        m("09:06", "user", "ok thanks"),
        m("09:07", "assistant", &format!("Running the migration now. {PROSE}")),
        m("09:08", "tool", "ERROR: relation \"customers\" does not exist (SQLSTATE 42P01)\nmigration failed after 1.2s"),
        m("09:10", "assistant", "The migration failed because invoices references customers before it is created. I reordered the statements so customers is created first."),
        m("09:11", "tool", "migration applied: 2 tables, 0 errors"),
        m("09:15", "user", "Great. Decision: we keep MySQL read replicas until April 15 for the reporting dashboard at https://reports.example.com/billing."),
        m("09:16", "assistant", &format!("Understood. {PROSE} Next step: port the nightly export job in scripts/export_invoices.py to psycopg3.")),
        m("09:17", "user", "Sounds good"),
        m("09:18", "assistant", &format!("{PROSE} {PROSE}")),
    ];
    leaf_source_text(&msgs, &Zone::utc())
}

fn run(source: &str, depth: i64, aggressive: bool) -> (String, i64) {
    let input = estimate(source);
    let target = targets::for_depth(depth, input, 2400, 2000, aggressive);
    (summarize_text(source, target, depth, aggressive), target)
}

#[test]
fn leaf_summary_keeps_what_matters_and_is_smaller() {
    let src = leaf_fixture();
    let (out, target) = run(&src, 0, false);
    let (tin, tout) = (estimate(&src), estimate(&out));
    assert!(tout < tin, "{tout} >= {tin}\n{out}");
    assert!(tout <= target, "{tout} > target {target}\n{out}");
    for needle in [
        "[2026-02-17 09:00 UTC] [user]",
        "March 3",
        "42P01",
        "migrations/001_init.sql",
        "April 15",
        "scripts/export_invoices.py",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    assert!(
        !out.contains("ok thanks") && !out.contains("Sounds good"),
        "{out}"
    );
    assert!(
        !out.contains("walk through them"),
        "filler prose kept:\n{out}"
    );
    let last = out.lines().last().unwrap();
    assert!(last.starts_with("Expand for details about: "), "{out}");
    assert!(last.contains("omitted line"), "{last}");
}

#[test]
fn deterministic() {
    let src = leaf_fixture();
    assert_eq!(run(&src, 0, false).0, run(&src, 0, false).0);
    assert_eq!(run(&src, 0, true).0, run(&src, 0, true).0);
}

#[test]
fn aggressive_is_shorter_and_still_has_the_error_and_decision() {
    let src = leaf_fixture();
    let (normal, _) = run(&src, 0, false);
    let (aggr, _) = run(&src, 0, true);
    assert!(estimate(&aggr) < estimate(&normal), "{aggr}");
    assert!(estimate(&aggr) <= estimate(&src) * 35 / 100 + 1, "{aggr}");
    assert!(
        aggr.contains("42P01") || aggr.contains("migration failed"),
        "{aggr}"
    );
    assert!(aggr
        .lines()
        .last()
        .unwrap()
        .starts_with("Expand for details about: "));
}

#[test]
fn footer_names_dropped_paths_and_errors() {
    let mut src = leaf_fixture();
    for i in 0..40 {
        src.push_str(&format!(
            "\n\n[2026-02-17 10:{:02} UTC] [tool]\nwarning: unused variable in src/gen/file_{i}.rs",
            i % 60
        ));
    }
    let (out, _) = run(&src, 0, true);
    let footer = out.lines().last().unwrap();
    assert!(footer.contains("full error output"), "{footer}");
    assert!(footer.contains("tool output"), "{footer}");
    assert!(footer.contains("db/schema.sql"), "{footer}");
    assert!(footer.contains("omitted lines from"), "{footer}");
    assert!(estimate(&out) < estimate(&src));
}

#[test]
fn condensed_input_keeps_ranges_and_inherits_footers() {
    let z = Zone::utc();
    let leaf = run(&leaf_fixture(), 0, false).0;
    let kids: Vec<SourceSummary> = (0..6)
        .map(|i| {
            SourceSummary::new(
                &format!("2026-02-1{i}T09:00:00Z"),
                &format!("2026-02-1{i}T11:30:00Z"),
                &leaf.replace("billing", &format!("billing-{i}")),
            )
        })
        .collect();
    let src = condensed_source_text(&kids, &z);
    let (out, target) = run(&src, 1, false);
    assert!(
        estimate(&out) < estimate(&src) && estimate(&out) <= target,
        "{out}"
    );
    assert!(out.contains("[2026-02-10 09:00–11:30 UTC]"), "{out}");
    assert!(
        !out.contains("] [user]"),
        "inner message headers are dropped at depth 1:\n{out}"
    );
    let footer = out.lines().last().unwrap();
    assert!(footer.starts_with("Expand for details about: "), "{footer}");
    assert_eq!(out.matches("Expand for details about:").count(), 1, "{out}");
    assert!(footer.contains("repeated lines"), "{footer}");
    assert!(
        footer.contains("full error output"),
        "inherited from the children: {footer}"
    );
    let (aggr, _) = run(&src, 1, true);
    assert!(estimate(&aggr) <= estimate(&src) * 35 / 100 + 1, "{aggr}");
    let footer = aggr.lines().last().unwrap();
    assert!(footer.contains("summaries"), "{footer}");
}

#[test]
fn small_and_odd_inputs() {
    let (out, _) = run("[2026-02-17 09:00 UTC] [user]\nok", 0, false);
    assert!(
        out.starts_with("Expand for details about:") || out.contains("ok"),
        "{out}"
    );
    let cjk = "決定：データベースを移行する。".repeat(80);
    let (out, _) = run(&cjk, 0, false);
    assert!(estimate(&out) < estimate(&cjk), "{out}");
    let code = format!(
        "[2026-02-17 09:00 UTC] [assistant]\n```\n{}\n```\nDone: build fixed in src/lib.rs.",
        (0..200)
            .map(|i| format!("let x{i} = {i};\n"))
            .collect::<String>()
    );
    let (out, _) = run(&code, 0, false);
    assert!(out.contains("src/lib.rs"), "{out}");
    assert!(out.lines().last().unwrap().contains("code blocks"), "{out}");
    assert!(!out.contains("let x"), "{out}");
}

#[test]
fn sentence_split_keeps_paths_and_versions() {
    assert_eq!(
        sentences("Bumped to v1.2.3 in Cargo.toml. Next: tag it. e.g. later"),
        [
            "Bumped to v1.2.3 in Cargo.toml.",
            "Next: tag it. e.g. later"
        ]
    );
}
