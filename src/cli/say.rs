//! Writing to the terminal (declared first in `cli`, so its macros reach every command). `outln!`/`out!` write to stdout and `errln!`/`err!` to stderr as
//! `println!` and friends do, but a write that fails comes back as an [`Error`] instead of a
//! panic: a reader that stopped reading (`toolscore … | head`) closes the pipe, and `main`
//! ends quietly on that error with the status a SIGPIPE gives. toolscore keeps SIGPIPE
//! ignored, as Rust sets it, because it talks to MCP servers over pipes where a closed pipe is
//! an error to report.

use std::fmt;
use std::io::Write as _;

use crate::cli::Error;

pub(crate) fn to_stdout(text: fmt::Arguments<'_>) -> Result<(), Error> {
    std::io::stdout()
        .lock()
        .write_fmt(text)
        .map_err(|e| Error::io("cannot write to stdout", e))
}

pub(crate) fn to_stderr(text: fmt::Arguments<'_>) -> Result<(), Error> {
    std::io::stderr()
        .lock()
        .write_fmt(text)
        .map_err(|e| Error::io("cannot write to stderr", e))
}

/// `outln!("…", args)?`: one line on stdout.
macro_rules! outln {
    () => {
        $crate::cli::say::to_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::say::to_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `out!("…", args)?`: text on stdout, no newline added.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::say::to_stdout(format_args!($($arg)*))
    };
}

/// `errln!("…", args)?`: one line on stderr.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::say::to_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}
