//! Target lengths of summaries (anchor-core §5.2, HEAD rules).

/// Smallest leaf target.
pub const LEAF_MIN: i64 = 192;
/// Smallest aggressive leaf target.
pub const LEAF_AGGRESSIVE_MIN: i64 = 96;
/// Smallest condensed target.
pub const CONDENSED_MIN: i64 = 512;

/// Leaf target: normal `clamp(floor(in × 0.35), 192, max(192, leafTargetTokens))`;
/// aggressive `max(96, min(cap, floor(in × 0.2)))` with
/// `cap = max(96, min(L, floor(L × 0.55)))`, `L = max(192, leafTargetTokens)`.
pub fn leaf(input_tokens: i64, leaf_target_tokens: i64, aggressive: bool) -> i64 {
    let l = leaf_target_tokens.max(LEAF_MIN);
    let input = input_tokens.max(0);
    if aggressive {
        let cap = LEAF_AGGRESSIVE_MIN.max(l.min(l * 55 / 100));
        LEAF_AGGRESSIVE_MIN.max(cap.min(input / 5))
    } else {
        (input * 35 / 100).clamp(LEAF_MIN, l)
    }
}

/// Condensed target: `max(512, condensedTargetTokens)` (normal and aggressive).
pub fn condensed(condensed_target_tokens: i64) -> i64 {
    condensed_target_tokens.max(CONDENSED_MIN)
}

/// The target for a summary of `depth` built from `input_tokens`.
pub fn for_depth(
    depth: i64,
    input_tokens: i64,
    leaf_target_tokens: i64,
    condensed_target_tokens: i64,
    aggressive: bool,
) -> i64 {
    if depth <= 0 {
        leaf(input_tokens, leaf_target_tokens, aggressive)
    } else {
        condensed(condensed_target_tokens)
    }
}

/// The configured target of a summary kind, which the overage cap multiplies:
/// `max(192, leafTargetTokens)` for leaves, `max(512, condensedTargetTokens)` otherwise.
pub fn kind_target(depth: i64, leaf_target_tokens: i64, condensed_target_tokens: i64) -> i64 {
    if depth <= 0 {
        leaf_target_tokens.max(LEAF_MIN)
    } else {
        condensed(condensed_target_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_targets_follow_head() {
        assert_eq!(leaf(100, 2400, false), 192);
        assert_eq!(leaf(4000, 2400, false), 1400);
        assert_eq!(leaf(20_000, 2400, false), 2400);
        assert_eq!(leaf(20_000, 100, false), 192);
        assert_eq!(leaf(4000, 2400, true), 800);
        assert_eq!(leaf(20_000, 2400, true), 1320);
        assert_eq!(leaf(100, 2400, true), 96);
        assert_eq!(leaf(20_000, 192, true), 105);
        assert_eq!(leaf(-5, 2400, false), 192);
    }

    #[test]
    fn condensed_and_kind_targets() {
        assert_eq!(condensed(2000), 2000);
        assert_eq!(condensed(100), 512);
        assert_eq!(for_depth(3, 99_999, 2400, 2000, true), 2000);
        assert_eq!(for_depth(0, 1000, 2400, 2000, false), 350);
        assert_eq!(kind_target(0, 50, 2000), 192);
        assert_eq!(kind_target(2, 2400, 900), 900);
    }
}
