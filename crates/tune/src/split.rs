//! Which cases tune may learn from and which it keeps back to confirm on: the cases tagged
//! `holdout` when the dataset has any, else a seeded split the command makes and records.
//!
//! The seeded split ranks the cases by a hash of (seed, case id) and holds back the first
//! `fraction` of them: the same seed always holds back the same cases, and adding a case never
//! moves an old one from one side to the other.

use sha2::{Digest, Sha256};
pub(crate) use toolscore_summary::tune::{Split, SplitMethod};

use toolscore_decide::HOLDOUT_TAG;

/// A case as the split sees it: its id and tags.
pub struct SplitCase<'a> {
    pub id: &'a str,
    pub tags: &'a [String],
}

/// Splits the cases: the tagged ones when any case is tagged `holdout`, else the seeded
/// `fraction`. Errors when either side would be empty (tune needs cases to learn from and
/// cases to confirm on).
pub fn split(cases: &[SplitCase<'_>], seed: u64, fraction: f64) -> Result<Split, String> {
    let (tagged, training, holdout) = sides(cases, seed, fraction);
    let out = Split {
        method: method(tagged, seed, fraction),
        training,
        holdout,
        training_scenarios: Vec::new(),
        holdout_scenarios: Vec::new(),
        scenario_method: None,
    };
    match (out.training.is_empty(), out.holdout.is_empty(), tagged) {
        (true, _, true) => {
            Err("every case is tagged `holdout`: tune needs untagged cases to learn from".into())
        }
        (_, true, false) | (true, _, false) => Err(format!(
            "{} cases with --holdout-fraction {fraction} leave {} to learn from and {} to confirm on; tune needs both (add cases, or tag the ones to hold back `holdout`)",
            cases.len(),
            out.training.len(),
            out.holdout.len()
        )),
        _ => Ok(out),
    }
}

/// Splits the scenarios tuned with the dataset into `split` by the same rule, on their own
/// (their tags, or the seed on their names). Either side may be empty; the cases' split
/// already holds both.
pub fn add_scenarios(split: &mut Split, scenarios: &[SplitCase<'_>], seed: u64, fraction: f64) {
    if scenarios.is_empty() {
        return;
    }
    let (tagged, training, holdout) = sides(scenarios, seed, fraction);
    split.training_scenarios = training;
    split.holdout_scenarios = holdout;
    split.scenario_method = Some(method(tagged, seed, fraction));
}

fn method(tagged: bool, seed: u64, fraction: f64) -> SplitMethod {
    if tagged {
        SplitMethod::Tagged
    } else {
        SplitMethod::Seeded { seed, fraction }
    }
}

/// Whether any unit is tagged `holdout`, and the training and held-out ids, each in the
/// given order: the tagged units, or the seeded `fraction`.
fn sides(cases: &[SplitCase<'_>], seed: u64, fraction: f64) -> (bool, Vec<String>, Vec<String>) {
    let tagged = cases
        .iter()
        .any(|c| c.tags.iter().any(|t| t == HOLDOUT_TAG));
    let held: Vec<bool> = if tagged {
        cases
            .iter()
            .map(|c| c.tags.iter().any(|t| t == HOLDOUT_TAG))
            .collect()
    } else {
        let take = ((cases.len() as f64) * fraction).round() as usize;
        let mut ranked: Vec<(u64, usize)> = cases
            .iter()
            .enumerate()
            .map(|(i, c)| (rank(seed, c.id), i))
            .collect();
        ranked.sort_unstable();
        let mut held = vec![false; cases.len()];
        for &(_, i) in ranked.iter().take(take) {
            held[i] = true;
        }
        held
    };
    let pick = |want: bool| -> Vec<String> {
        cases
            .iter()
            .zip(&held)
            .filter(|(_, h)| **h == want)
            .map(|(c, _)| c.id.to_owned())
            .collect()
    };
    (tagged, pick(false), pick(true))
}

/// The rank of a case in the seeded split: the first 8 bytes of SHA-256 of `seed:id`.
fn rank(seed: u64, id: &str) -> u64 {
    let digest = Sha256::digest(format!("{seed}:{id}").as_bytes());
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cases(ids: &[String], tags: &[Vec<String>]) -> Vec<(String, Vec<String>)> {
        ids.iter().cloned().zip(tags.iter().cloned()).collect()
    }

    fn view(c: &[(String, Vec<String>)]) -> Vec<SplitCase<'_>> {
        c.iter().map(|(id, tags)| SplitCase { id, tags }).collect()
    }

    #[test]
    fn tagged_cases_are_the_holdout_whatever_the_seed() {
        let ids: Vec<String> = (0..5).map(|i| format!("c{i}")).collect();
        let mut tags = vec![Vec::new(); 5];
        tags[3] = vec!["holdout".to_owned()];
        let c = cases(&ids, &tags);
        let s = split(&view(&c), 7, 0.5).unwrap();
        assert_eq!(s.method, SplitMethod::Tagged);
        assert_eq!(s.holdout, vec!["c3"]);
        assert_eq!(s.training, vec!["c0", "c1", "c2", "c4"]);
    }

    #[test]
    fn a_seeded_split_is_stable_and_adding_a_case_moves_no_old_one() {
        let ids: Vec<String> = (0..40).map(|i| format!("case-{i}")).collect();
        let tags = vec![Vec::new(); 40];
        let c = cases(&ids, &tags);
        let a = split(&view(&c), 1, 0.25).unwrap();
        assert_eq!(a.holdout.len(), 10);
        assert_eq!(a, split(&view(&c), 1, 0.25).unwrap());
        assert_ne!(a.holdout, split(&view(&c), 2, 0.25).unwrap().holdout);
        // Case order does not matter, only (seed, id).
        let mut reversed = c.clone();
        reversed.reverse();
        let mut r = split(&view(&reversed), 1, 0.25).unwrap().holdout;
        r.sort();
        let mut h = a.holdout.clone();
        h.sort();
        assert_eq!(r, h);
    }

    #[test]
    fn scenarios_are_split_by_their_own_tags_or_the_seed_and_may_leave_a_side_empty() {
        let ids: Vec<String> = (0..5).map(|i| format!("c{i}")).collect();
        let mut tags = vec![Vec::new(); 5];
        tags[0] = vec!["holdout".to_owned()];
        let c = cases(&ids, &tags);
        let mut s = split(&view(&c), 1, 0.3).unwrap();
        // Untagged scenarios: the seeded fraction, recorded as such beside the tagged cases.
        let names: Vec<String> = (0..4).map(|i| format!("sc{i}")).collect();
        let sc = cases(&names, &vec![Vec::new(); 4]);
        add_scenarios(&mut s, &view(&sc), 1, 0.3);
        assert_eq!(s.method, SplitMethod::Tagged);
        assert_eq!(
            s.scenario_method,
            Some(SplitMethod::Seeded {
                seed: 1,
                fraction: 0.3
            })
        );
        assert_eq!(
            (s.training_scenarios.len(), s.holdout_scenarios.len()),
            (3, 1)
        );
        // One untagged scenario rounds to none held out: it is only learnt from.
        let mut s = split(&view(&c), 1, 0.3).unwrap();
        add_scenarios(&mut s, &view(&sc[..1]), 1, 0.3);
        assert_eq!(
            (s.training_scenarios.len(), s.holdout_scenarios.len()),
            (1, 0)
        );
        // No scenario: nothing recorded.
        let mut s = split(&view(&c), 1, 0.3).unwrap();
        add_scenarios(&mut s, &[], 1, 0.3);
        assert_eq!(s.scenario_method, None);
    }

    #[test]
    fn both_sides_must_have_cases() {
        let ids = vec!["only".to_owned()];
        let c = cases(&ids, &[Vec::new()]);
        let e = split(&view(&c), 1, 0.3).unwrap_err();
        assert!(
            e.contains("1 cases with --holdout-fraction 0.3 leave 1 to learn from and 0"),
            "{e}"
        );
        let c = cases(&ids, &[vec!["holdout".to_owned()]]);
        assert!(
            split(&view(&c), 1, 0.3)
                .unwrap_err()
                .contains("every case is tagged")
        );
    }
}
