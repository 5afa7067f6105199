//! Text from outside toolscore (case ids, tool and provider names, a model's or a server's
//! words, paths) made safe to show, and commands made safe to paste.
//!
//! Two functions, one per use: [`inert`] for a quotation shown on a terminal or a page (one
//! bounded line, no control character), and [`command`] for a command line toolscore prints
//! for a user to paste (each word POSIX-shell-quoted when it needs to be, and inert). Every
//! printed `toolscore …` hint goes through [`command`], so an id such as `wx; touch pwned #`
//! is printed as `'wx; touch pwned #'`, one word a shell runs nothing of.

use std::borrow::Cow;

/// `text` on one line, at most `max` characters (then `…`), with line breaks and tabs as
/// spaces, runs of spaces as one, and every other control character (an ANSI escape's ESC,
/// a bell, a C1 control) and every bidirectional or line-separator mark written as `\u{…}`,
/// so nothing from outside can move a terminal's cursor, recolour it, retitle it or reorder
/// what it shows. Reads no further than it writes, so a huge text costs no more than a short.
pub fn inert(text: &str, max: usize) -> String {
    inert_cut(text, max, "…")
}

/// [`inert`] with `cut` (e.g. `…(truncated)`) written after a text cut at `max` characters.
pub fn inert_cut(text: &str, max: usize, cut: &str) -> String {
    let mut out = String::new();
    let mut shown = 0usize;
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() && !is_hidden(c) {
            space = !out.is_empty();
            continue;
        }
        let piece = if c.is_control() || is_hidden(c) {
            format!("\\u{{{:x}}}", u32::from(c))
        } else {
            c.to_string()
        };
        let width = piece.chars().count() + usize::from(space);
        if shown + width > max {
            out.push_str(cut);
            return out;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push_str(&piece);
        shown += width;
    }
    out
}

/// Characters that change how a line is shown without being control characters: directional
/// marks and overrides, line and paragraph separators, the byte-order mark.
pub fn is_hidden(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// Characters a word may hold and still be pasted into a POSIX shell unquoted.
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_./:@=+,%".contains(c)
}

/// One word of a command line for a POSIX shell: as it is when every character is plain
/// (letters, digits, `-_./:@=+,%`), else in single quotes, each `'` written `'\''`; the empty
/// word is `''`. Control characters and the marks of [`is_hidden`] are first written as
/// `\u{…}` (the word then names something else, but nothing it holds reaches a terminal).
pub fn shell_word(word: &str) -> Cow<'_, str> {
    if !word.is_empty() && word.chars().all(is_plain) {
        return Cow::Borrowed(word);
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        match c {
            '\'' => out.push_str(r"'\''"),
            c if c.is_control() || is_hidden(c) => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    Cow::Owned(out)
}

/// A command line for a user to paste: the words, each through [`shell_word`], joined by
/// spaces. The one way toolscore writes a command it prints (`toolscore explain DIR CASE`,
/// `toolscore run --resume DIR`, …).
pub fn command<I, S>(words: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    words
        .into_iter()
        .map(|w| shell_word(w.as_ref()).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_text_is_one_bounded_line() {
        assert_eq!(inert("a\r\nfake: ok\u{1b}[2J", 40), r"a fake: ok\u{1b}[2J");
        assert_eq!(
            inert_cut(&"x".repeat(100), 10, "…(truncated)"),
            format!("{}…(truncated)", "x".repeat(10))
        );
        assert_eq!(inert_cut("short", 10, "…(truncated)"), "short");
    }

    #[test]
    fn plain_words_stay_and_others_are_single_quoted() {
        assert_eq!(
            command(["toolscore", "explain", "reports/r-1", "c_00"]),
            "toolscore explain reports/r-1 c_00"
        );
        assert_eq!(
            command(["toolscore", "explain", "reports/inj", "wx; touch pwned #"]),
            "toolscore explain reports/inj 'wx; touch pwned #'"
        );
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$(id)`id`"), "'$(id)`id`'");
        assert_eq!(
            shell_word("my dir/toolscore.yaml"),
            "'my dir/toolscore.yaml'"
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let w = shell_word("a\u{1b}]0;x\u{7}\nb\u{202e}");
        assert!(!w.chars().any(|c| c.is_control() || is_hidden(c)), "{w}");
        assert_eq!(w, r"'a\u{1b}]0;x\u{7}\u{a}b\u{202e}'");
    }

    #[test]
    fn a_quoted_word_reads_back_as_itself() {
        // What a POSIX shell makes of the quoted word: the text between quotes, `\'` outside.
        fn unquote(w: &str) -> String {
            let mut out = String::new();
            let mut quoted = false;
            let mut chars = w.chars();
            while let Some(c) = chars.next() {
                match (quoted, c) {
                    (_, '\'') => quoted = !quoted,
                    (false, '\\') => out.extend(chars.next()),
                    (_, c) => out.push(c),
                }
            }
            out
        }
        for w in [
            "a b",
            "'",
            "''x'",
            "a;b|c&d",
            "~x",
            "*",
            "tab\there",
            "",
            "é ü",
        ] {
            let w = w.replace('\t', " ");
            assert_eq!(unquote(&shell_word(&w)), w);
        }
    }
}
