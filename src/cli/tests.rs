use super::output::Output;
use super::*;

/// Runs the CLI on captured streams: (exit code, stdout, stderr).
pub(crate) fn cli(args: &[&str]) -> (i32, String, String) {
    let (mut out, cap) = Output::capture(false);
    let code = run_with(args.iter().map(|s| s.to_string()).collect(), &mut out);
    (code, cap.stdout(), cap.stderr())
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    // No subcommand opens the browser, which needs a terminal (captured streams are not).
    let (code, _, err) = cli(&[]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(err.contains("Usage: lcm-tui"), "{err}");
    let (code, _, err) = cli(&["--provider", "offline", "doctor", "--all"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("go after a subcommand"), "{err}");
    let (code, out, _) = cli(&["--help"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("prompts"));
    let (code, out, _) = cli(&["--version"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.starts_with("lcm-tui "));
    let (code, _, err) = cli(&["frobnicate"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("frobnicate"));
    let (code, _, err) = cli(&["prompts"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("--list"), "{err}");
    let (code, _, err) = cli(&["prompts", "--show", "bogus"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("condensed-d1"), "{err}");
    let (code, _, _) = cli(&["prompts", "--list", "--show", "leaf"]);
    assert_eq!(code, EXIT_USAGE);
    let (code, _, _) = cli(&["prompts", "--list", "--force"]);
    assert_eq!(code, EXIT_USAGE);
    let (code, _, err) = cli(&["prompts", "--render", "leaf", "--depth", "2"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("condensed-d2"), "{err}");
}

#[test]
fn prompts_subcommand_end_to_end() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("p");
    let dir_s = dir.to_string_lossy().into_owned();
    let (code, out, _) = cli(&["prompts", "--list", "--prompt-dir", &dir_s]);
    assert_eq!(code, 0);
    assert!(out.contains("does not exist"));
    assert!(out.contains("leaf.jinja"));
    assert_eq!(out.matches("embedded (no override)").count(), 4);
    let (code, out, _) = cli(&["prompts", "--export", &dir_s]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("wrote ")).count(), 4);
    let (code, out, _) = cli(&["prompts", "--dump", &dir_s]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().filter(|l| l.starts_with("skipped ")).count(), 4);
    let (code, out, _) = cli(&[
        "prompts",
        "--show",
        "Condensed-D2.tmpl",
        "--prompt-dir",
        &dir_s,
    ]);
    assert_eq!(code, 0);
    assert!(out.starts_with("# Source: "));
    assert!(out
        .lines()
        .next()
        .unwrap()
        .ends_with("condensed-d2.jinja (override)"));
    let empty = d.path().join("empty").to_string_lossy().into_owned();
    let (code, out, _) = cli(&[
        "prompts",
        "--render",
        "d1",
        "--target-tokens",
        "777",
        "--previous-context",
        "PREV-CTX",
        "--prompt-dir",
        &empty,
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("Target length: about 777 tokens"));
    assert!(out.contains("PREV-CTX"));
    let (code, out, _) = cli(&[
        "--json",
        "prompts",
        "--diff",
        "leaf",
        "--prompt-dir",
        &dir_s,
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["identical"], true);
}

#[test]
fn json_errors_are_one_document() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    // Exporting into a path that is a file fails with LCM_IO and exit 1.
    let (code, out, err) = cli(&["prompts", "--export", &file.to_string_lossy(), "--json"]);
    assert_eq!(code, EXIT_FAILURE);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["error"]["code"], "LCM_IO");
    assert!(err.starts_with("error: "));
}

/// A database file with one conversation: 12 messages, 4 leaves over the first 8,
/// two d1 nodes and one d2 node. Returns (conversation id, summary ids in plan order).
pub(crate) fn build_db(path: &std::path::Path) -> (i64, Vec<String>) {
    use crate::engine::tests::ingest_messages;
    use crate::engine::{Engine, InsertSummaryParams};
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let e = Engine::open(db::engine_options(path)).await.unwrap();
        let t0 = 1_771_342_620_000i64;
        let messages = (0..12)
            .map(|i| {
                serde_json::json!({
                    "role": if i % 2 == 0 { "user" } else { "assistant" },
                    "content": format!("Message {i}: the quarterly budget review moved to Friday; Dana owns the slides and the venue booking."),
                    "timestamp": t0 + i * 600_000,
                })
            })
            .collect();
        let (conv, ids) = ingest_messages(&e, "cli-test", messages).await;
        let mut all = Vec::new();
        let mut leaves = Vec::new();
        for k in 0..4 {
            let id = e
                .insert_summary(InsertSummaryParams {
                    conversation_id: conv,
                    content: format!("Old leaf {k}: budget review notes, line one.\nLine two of leaf {k}."),
                    message_ids: Some(ids[k * 2..k * 2 + 2].to_vec()),
                    summary_ids: None,
                    model: None,
                })
                .await
                .unwrap();
            leaves.push(id);
        }
        all.extend(leaves.clone());
        let mut d1 = Vec::new();
        for pair in leaves.chunks(2) {
            d1.push(
                e.insert_summary(InsertSummaryParams {
                    conversation_id: conv,
                    content: "Old condensed d1 text.".into(),
                    message_ids: None,
                    summary_ids: Some(pair.to_vec()),
                    model: None,
                })
                .await
                .unwrap(),
            );
        }
        all.extend(d1.clone());
        all.push(
            e.insert_summary(InsertSummaryParams {
                conversation_id: conv,
                content: "Old d2 text.".into(),
                message_ids: None,
                summary_ids: Some(d1),
                model: None,
            })
            .await
            .unwrap(),
        );
        e.close().await.unwrap();
        (conv, all)
    })
}

fn checksum(p: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(std::fs::read(p).unwrap()))
}

#[test]
fn rewrite_dry_run_diff_json_and_apply() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("lcm.db");
    let (conv, ids) = build_db(&path);
    let db = path.to_string_lossy().into_owned();
    let conv_s = conv.to_string();
    let prompts = d.path().join("no-prompts").to_string_lossy().into_owned();
    let base = [
        "rewrite",
        conv_s.as_str(),
        "--db",
        db.as_str(),
        "--provider",
        "offline",
        "--prompt-dir",
        prompts.as_str(),
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(&refs)
    };
    let sum_before = checksum(&path);
    let (code, out, err) = run(with(&["--all", "--diff"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        checksum(&path),
        sum_before,
        "a dry run changed the database file"
    );
    assert!(
        out.starts_with(&format!(
        "Rewriting 7 summaries of conversation {conv} (4 leaves, 2 d1, 1 d2) with offline — dry run"
    )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "━━━ {} (d0, 2 messages, 2026-02-17 15:37–15:47 UTC) ━━━\n\nOLD (",
            ids[0]
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "━━━ {} (d1, 2 children, 2026-02-17 15:37–16:07 UTC) ━━━",
            ids[4]
        )),
        "{out}"
    );
    assert!(out.contains("\nNEW ("));
    assert!(out.contains("  Δ tokens: "));
    assert!(out.contains(&format!("--- old/{}\n+++ new/{}\n", ids[0], ids[0])));
    assert!(!out.contains("\x1b["), "colour without a terminal");
    let last = out.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with("Would rewrite 7 summaries. Total: "),
        "{last}"
    );

    let (code, out, _) = run(with(&["--depth", "1", "--json"]));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["dryRun"], true);
    assert_eq!(v["entries"].as_array().unwrap().len(), 2);
    assert_eq!(v["entries"][0]["summaryId"], ids[4]);
    assert_eq!(checksum(&path), sum_before);

    let (code, out, err) = run(with(&["--summary", &ids[4], "--bottom-up", "--apply"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Rewrote 3 summaries. Total: "), "{out}");
    assert_ne!(checksum(&path), sum_before);
    let (_, out, _) = run(with(&["--summary", &ids[0], "--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["entries"].as_array().unwrap().len(), 1);
    assert_ne!(
        v["entries"][0]["oldContent"].as_str().unwrap(),
        "Old leaf 0: budget review notes, line one.\nLine two of leaf 0."
    );
}

#[test]
fn rewrite_errors_and_usage() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("lcm.db");
    let (conv, _ids) = build_db(&path);
    let db = path.to_string_lossy().into_owned();
    let conv_s = conv.to_string();
    let r = |extra: &[&str]| {
        let mut a = vec!["rewrite", "--db", db.as_str(), "--provider", "offline"];
        a.extend_from_slice(extra);
        cli(&a)
    };
    let (code, _, err) = r(&[&conv_s, "--summary", "sum_0000000000000000"]);
    assert_eq!(code, 1);
    assert!(err.contains("7 summaries (d0 ×4, d1 ×2, d2 ×1)"), "{err}");
    assert!(err.contains("LCM_NOT_FOUND"));
    let (code, _, err) = r(&["4242", "--all"]);
    assert_eq!(code, 1);
    assert!(err.contains("conversation 4242 does not exist"), "{err}");
    let (code, out, _) = r(&["4242", "--all", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["error"]["code"], "LCM_NOT_FOUND");
    let (code, _, err) = r(&[&conv_s, "--depth", "7"]);
    assert_eq!(code, 1);
    assert!(err.contains("no summaries at depth 7"), "{err}");
    for bad in [
        vec![conv_s.as_str()],
        vec![conv_s.as_str(), "--all", "--depth", "1"],
        vec![conv_s.as_str(), "--all", "--dry-run", "--apply"],
        vec![conv_s.as_str(), "--all", "--concurrency", "0"],
        vec![conv_s.as_str(), "--all", "--subtree"],
        vec!["abc", "--all"],
        vec![conv_s.as_str(), "--all", "--provider", "gemini"],
        vec![conv_s.as_str(), "--all", "--timezone", "Mars/Base"],
    ] {
        let (code, _, err) = r(&bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
    let missing = d.path().join("missing.db").to_string_lossy().into_owned();
    let (code, _, err) = cli(&[
        "rewrite",
        "1",
        "--all",
        "--provider",
        "offline",
        "--db",
        &missing,
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("database not found"), "{err}");
    assert!(!std::path::Path::new(&missing).exists());
}

#[test]
fn stored_text_prints_visible_on_a_terminal_and_byte_exact_in_a_pipe() {
    let entry = crate::rewrite::RewriteEntry {
        summary_id: "sum_a".into(),
        kind: crate::store::summaries::SummaryKind::Leaf,
        depth: 0,
        child_count: 2,
        earliest_at: None,
        latest_at: None,
        time_range: None,
        old_content: "\x1b[31mFAIL\x1b[0m\r\n\tcol\x07umn".into(),
        new_content: "clean\x1b[2J".into(),
        old_tokens: 5,
        new_tokens: 2,
        delta: -3,
        diff: "-\x1b[31mFAIL\x1b[0m\n+clean\x1b[2J\n".into(),
        level: None,
        model: None,
        applied: false,
        skipped: None,
    };
    let print = |tty: bool| {
        let (mut out, cap) = Output::capture(false);
        out.out_tty = tty;
        rewrite::print_entry(&mut out, &entry, 0, true);
        cap.stdout()
    };
    let shown = print(true);
    assert!(
        !shown.contains('\x1b') && !shown.contains('\x07') && !shown.contains('\r'),
        "{shown:?}"
    );
    for want in [
        "  ␛[31mFAIL␛[0m\n",
        "          col␇umn\n",
        "  clean␛[2J\n",
        "-␛[31mFAIL␛[0m\n+clean␛[2J\n",
    ] {
        assert!(shown.contains(want), "{want:?} not in {shown:?}");
    }
    // A preview line is cut at 160 terminal columns on a terminal (a Hangul
    // syllable takes two), at 160 characters in a pipe.
    let long = crate::rewrite::RewriteEntry {
        old_content: "한".repeat(200),
        ..entry.clone()
    };
    let cut = |tty: bool| {
        let (mut out, cap) = Output::capture(false);
        out.out_tty = tty;
        rewrite::print_entry(&mut out, &long, 3, false);
        let text = cap.stdout();
        text.lines()
            .find(|l| l.contains('한'))
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(cut(true), format!("  {}…", "한".repeat(79)));
    assert_eq!(cut(false), format!("  {}…", "한".repeat(160)));
    let piped = print(false);
    assert!(
        piped.contains("\x1b[31mFAIL\x1b[0m") && piped.contains("+clean\x1b[2J\n"),
        "{piped:?}"
    );
}

#[test]
fn status_prints_the_database_and_the_session() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("lcm.db");
    let (conv, ids) = build_db(&path);
    let db = path.to_string_lossy().into_owned();
    let (code, out, err) = cli(&[
        "status",
        "--db",
        &db,
        "--session",
        "cli-test",
        "--budget",
        "1000",
        "--json",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["database"]["path"], db.as_str());
    assert_eq!(v["conversations"]["active"], 1);
    assert_eq!(v["session"]["conversationId"], conv);
    assert_eq!(v["session"]["messages"], 12);
    let depths = v["session"]["summariesByDepth"].as_array().unwrap();
    let total: i64 = depths.iter().map(|d| d["count"].as_i64().unwrap()).sum();
    assert_eq!(total, ids.len() as i64);
    assert_eq!(v["session"]["threshold"], 750);
    let (code, text, err) = cli(&[
        "status",
        "--db",
        &db,
        "--session",
        "cli-test",
        "--budget",
        "1000",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        text.contains(&format!("Session (conversation {conv})")),
        "{text}"
    );
    assert!(
        text.contains("Conversations: 1 active, 0 archived"),
        "{text}"
    );
    assert!(text.contains("largest: "), "{text}");
    assert!(
        text.contains("d0 4 (0 in context), d1 2 (0 in context), d2 1 (1 in context)"),
        "{text}"
    );
    assert!(text.contains("of 1,000 budget"), "{text}");
}
