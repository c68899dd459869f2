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
    let (code, _, err) = cli(&[]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("Usage: lcm-tui"), "{err}");
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
