//! What the engine reads from the host's own parameters (OpenClaw passes them on
//! every lifecycle call; everything else of theirs is ignored).

use serde_json::Value;

/// The token budget the host states when it gives no `tokenBudget`:
/// `runtimeContext.tokenBudget`, else `runtimeSettings.limits.promptTokenBudget`.
pub fn stated_budget(
    runtime_context: Option<&Value>,
    runtime_settings: Option<&Value>,
) -> Option<f64> {
    let from_context = runtime_context.and_then(|c| c.get("tokenBudget"));
    let from_settings = runtime_settings
        .and_then(|s| s.get("limits"))
        .and_then(|l| l.get("promptTokenBudget"));
    from_context.or(from_settings).and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn context_wins_over_settings() {
        let c = json!({"tokenBudget": 5000});
        let s = json!({"limits": {"promptTokenBudget": 7000}});
        assert_eq!(stated_budget(Some(&c), Some(&s)), Some(5000.0));
        assert_eq!(stated_budget(None, Some(&s)), Some(7000.0));
        assert_eq!(stated_budget(Some(&json!({})), None), None);
    }
}
