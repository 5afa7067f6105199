//! `description-near-duplicate`: tools whose descriptions share 80% of their words, found
//! without comparing every pair.
//!
//! Comparing every pair is quadratic (10,000 tools took 9 s, 100,000 more than 3 minutes). This
//! is the exact "AllPairs" similarity join instead: words are ordered by how rarely they occur
//! in the catalog, and two word sets with Jaccard similarity ≥ 0.8 must share a word among the
//! first `|A| − ⌈0.8·|A|⌉ + 1` (rarest) words of each (the prefix filter), and their sizes are
//! within a factor 0.8 of each other (the size filter). Only tools sharing a prefix word are
//! compared, with the same arithmetic as the pairwise loop, so the findings are the same: a
//! finding on tool `j` against the first earlier tool `i` that matches.

use crate::RuleId;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

use super::Raw;
use toolscore_core::catalog::Catalog;

/// Descriptions with fewer distinct words are too short to call near-duplicates.
const MIN_WORDS: usize = 6;

/// Candidate pairs examined before the check gives up. A real catalog of 100,000 tools
/// examines a few million; only a catalog built so that every tool's rarest words are shared
/// by all the others gets near this (about a second of work), and then the check stops with a
/// `lint-bound` finding rather than running for hours.
pub(crate) const MAX_CANDIDATES: u64 = 200_000_000;

/// The distinct words of a description (lower-cased, longer than one byte).
pub(crate) fn word_set(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect()
}

/// Whether word sets of sizes `a` and `b` sharing `inter` words count as near-duplicates: the
/// pairwise loop's exact float arithmetic, kept so the findings cannot drift.
fn similar(inter: usize, a: usize, b: usize) -> Option<f64> {
    let union = a + b - inter;
    let sim = inter as f64 / union as f64;
    (sim >= 0.8).then_some(sim)
}

/// How many of a set's rarest words must be indexed so that any set with Jaccard ≥ 0.8 to it
/// shares one: `n − ⌈0.8·n⌉ + 1`, in integers (⌈4n/5⌉ = (4n + 4) / 5).
fn prefix_len(n: usize) -> usize {
    n - (4 * n).div_ceil(5) + 1
}

/// The smallest set size that can reach Jaccard 0.8 with a set of `n` words: ⌈0.8·n⌉.
fn min_partner(n: usize) -> usize {
    (4 * n).div_ceil(5)
}

/// Each description's word set as word ids sorted rarest first (ties by first appearance).
fn ranked_sets(catalog: &Catalog) -> (Vec<Vec<u32>>, usize) {
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut freq: Vec<u32> = Vec::new();
    let mut sets: Vec<Vec<u32>> = Vec::with_capacity(catalog.tools.len());
    for tool in &catalog.tools {
        let set: Vec<u32> = word_set(&tool.description)
            .into_iter()
            .map(|w| {
                let next = ids.len() as u32;
                let id = *ids.entry(w).or_insert(next);
                if id == next {
                    freq.push(0);
                }
                freq[id as usize] += 1;
                id
            })
            .collect();
        sets.push(set);
    }
    // rank[id]: position of the word in the global order, rarest first.
    let mut order: Vec<u32> = (0..freq.len() as u32).collect();
    order.sort_by_key(|&id| (freq[id as usize], id));
    let mut rank = vec![0u32; freq.len()];
    for (r, &id) in order.iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    for set in &mut sets {
        for id in set.iter_mut() {
            *id = rank[*id as usize];
        }
        set.sort_unstable();
    }
    (sets, freq.len())
}

/// Words two sorted sets share.
fn overlap(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The first earlier tool (lowest index) whose description matches set `j`, with the
/// similarity, examining candidates in index order across the prefix words' posting lists
/// so the search stops at the first match. `budget` counts candidates examined; None with
/// `*budget == 0` means it ran out.
fn first_match(
    sets: &[Vec<u32>],
    index: &[Vec<u32>],
    j: usize,
    budget: &mut u64,
) -> Option<(usize, f64)> {
    let b = &sets[j];
    let prefix = &b[..prefix_len(b.len())];
    // (Reverse(next candidate), posting list, position in it): a k-way merge in index order.
    let mut heap: BinaryHeap<(std::cmp::Reverse<u32>, usize, usize)> = prefix
        .iter()
        .filter(|&&w| !index[w as usize].is_empty())
        .map(|&w| (std::cmp::Reverse(index[w as usize][0]), w as usize, 0))
        .collect();
    let mut last = None;
    while let Some((std::cmp::Reverse(i), w, pos)) = heap.pop() {
        if let Some(&next) = index[w].get(pos + 1) {
            heap.push((std::cmp::Reverse(next), w, pos + 1));
        }
        if last == Some(i) {
            continue;
        }
        last = Some(i);
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        let a = &sets[i as usize];
        let (small, large) = (a.len().min(b.len()), a.len().max(b.len()));
        if small < min_partner(large) {
            continue;
        }
        if let Some(sim) = similar(overlap(a, b), a.len(), b.len()) {
            return Some((i as usize, sim));
        }
    }
    None
}

/// `description-near-duplicate` findings: on each tool whose description shares 80% of its
/// words with an earlier tool's (descriptions of six words or more), against the first such.
pub(crate) fn near_duplicates(catalog: &Catalog, out: &mut Vec<Raw>) {
    let (sets, words) = ranked_sets(catalog);
    // Posting lists: word → tools (ascending) that have it among their prefix words.
    let mut index: Vec<Vec<u32>> = vec![Vec::new(); words];
    let mut budget = MAX_CANDIDATES;
    for j in 0..sets.len() {
        if sets[j].len() < MIN_WORDS {
            continue;
        }
        match first_match(&sets, &index, j, &mut budget) {
            Some((i, sim)) => out.push(finding(catalog, i, j, sim)),
            None if budget == 0 => {
                out.push(Raw::new(
                    RuleId::LintBound,
                    None,
                    "",
                    format!(
                        "the near-duplicate check stopped at tool {} of {} after examining {MAX_CANDIDATES} candidate pairs (its bound); later tools were not compared",
                        j + 1,
                        sets.len()
                    ),
                    "Nothing to fix in the catalog unless it is generated: many tools whose rarest words are all shared make every pair a candidate.",
                ));
                return;
            }
            None => {}
        }
        for &w in &sets[j][..prefix_len(sets[j].len())] {
            index[w as usize].push(j as u32);
        }
    }
}

fn finding(catalog: &Catalog, i: usize, j: usize, sim: f64) -> Raw {
    Raw::new(
        RuleId::DescriptionNearDuplicate,
        Some(&catalog.tools[j].name),
        "description",
        format!(
            "the description shares {:.0}% of its words with `{}`'s; the model cannot tell the two apart",
            sim * 100.0,
            catalog.tools[i].name
        ),
        format!(
            "Say in each what distinguishes it from `{}` and when to prefer it.",
            catalog.tools[i].name
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The pairwise loop this module replaced: the oracle its findings must equal.
    fn pairwise(catalog: &Catalog, out: &mut Vec<Raw>) {
        let sets: Vec<BTreeSet<String>> = catalog
            .tools
            .iter()
            .map(|t| word_set(&t.description))
            .collect();
        for j in 1..sets.len() {
            for i in 0..j {
                let (a, b) = (&sets[i], &sets[j]);
                if a.len() < 6 || b.len() < 6 {
                    continue;
                }
                let inter = a.intersection(b).count();
                let union = a.union(b).count();
                let sim = inter as f64 / union as f64;
                if sim >= 0.8 {
                    out.push(finding(catalog, i, j, sim));
                    break;
                }
            }
        }
    }

    fn messages(catalog: &Catalog, f: fn(&Catalog, &mut Vec<Raw>)) -> Vec<(String, String)> {
        let mut out = Vec::new();
        f(catalog, &mut out);
        out.into_iter()
            .map(|r| (r.tool.unwrap_or_default(), r.message))
            .collect()
    }

    fn of_descriptions(descriptions: &[String]) -> Catalog {
        catalog(
            descriptions
                .iter()
                .enumerate()
                .map(|(i, d)| tool(&format!("t{i}"), d, json!({"type": "object"})))
                .collect(),
        )
    }

    #[test]
    fn prefix_and_size_bounds_are_the_integer_forms() {
        for n in 1..200 {
            assert_eq!(
                min_partner(n),
                (0.8 * n as f64 - 1e-9).ceil() as usize,
                "{n}"
            );
            assert_eq!(prefix_len(n), n - min_partner(n) + 1);
        }
    }

    #[test]
    fn the_first_earlier_match_is_named() {
        let d = |extra: &str| format!("look up one invoice by its id and return its {extra}");
        let c = of_descriptions(&[
            "short one".into(),
            d("lines"),
            d("totals"),
            d("lines"),
            "something else entirely with enough words here".into(),
        ]);
        let got = messages(&c, near_duplicates);
        assert_eq!(got, messages(&c, pairwise));
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "t2");
        assert!(got[1].1.contains("`t1`"), "{got:?}");
    }

    #[test]
    fn a_catalog_of_one_description_repeated_is_linear() {
        let c = of_descriptions(&vec![
            "look up one invoice by its id and return it"
                .to_owned();
            20_000
        ]);
        let mut out = Vec::new();
        near_duplicates(&c, &mut out);
        assert_eq!(out.len(), 19_999);
        assert!(out.iter().all(|r| r.message.contains("`t0`")));
    }

    /// Descriptions over a small vocabulary, so that near-duplicates, sizes at the 0.8
    /// boundary and ties between several earlier matches are all common.
    fn description() -> impl Strategy<Value = String> {
        prop::collection::vec(0..14usize, 0..12).prop_map(|ws| {
            ws.iter()
                .map(|w| format!("w{w}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn equals_the_pairwise_loop(descriptions in prop::collection::vec(description(), 0..40)) {
            let c = of_descriptions(&descriptions);
            prop_assert_eq!(messages(&c, near_duplicates), messages(&c, pairwise));
        }
    }
}
