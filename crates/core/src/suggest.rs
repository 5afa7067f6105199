//! "Did you mean …?": the known name closest to a mistyped one, for the errors that refuse a
//! name (`--provider dmeo`, `--dataset datasets/biling`).

/// The candidate nearest to `wanted` by edit distance (insertions, deletions, substitutions
/// and swaps of two neighbouring characters, ignoring case), when it is near enough to be a
/// typo: at most one edit for names up to 4 characters, two up to 8, three beyond. Ties go to
/// the first candidate given; `wanted` itself is never suggested.
pub fn did_you_mean<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let typed = wanted;
    let wanted: Vec<char> = wanted.to_lowercase().chars().collect();
    let limit = match wanted.len() {
        0 => return None,
        1..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        let c: Vec<char> = candidate.to_lowercase().chars().collect();
        // Names far longer or shorter cannot be within the limit: skip the table.
        if c.len().abs_diff(wanted.len()) > limit {
            continue;
        }
        let d = distance(&wanted, &c);
        // The name itself is no suggestion; the same name in other case is one.
        if candidate != typed && d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Optimal string alignment distance: Levenshtein with a swap of neighbours as one edit.
fn distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = v;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_name_and_a_stranger_finds_none() {
        let known = ["demo", "demo-greedy", "local", "openai"];
        assert_eq!(did_you_mean("dmeo", known), Some("demo"));
        assert_eq!(did_you_mean("demo-gredy", known), Some("demo-greedy"));
        assert_eq!(did_you_mean("OpenAI", known), Some("openai"));
        assert_eq!(did_you_mean("demo", known), None, "the name itself");
        assert_eq!(did_you_mean("anthropic", known), None);
        assert_eq!(
            did_you_mean("biling", ["billing", "lint-labelled"]),
            Some("billing")
        );
        assert_eq!(did_you_mean("", known), None);
    }
}
