//! The types every layer of toolscore shares: neutral conversation messages (`message`), the
//! trial record and its values (`record`), the run's event stream (`event`), tool catalogs
//! (`catalog`), canonical JSON (`json`), reading user files (`input`), atomic writes
//! (`atomic`), the rate metrics (`metric`), text made safe to show and commands safe to paste
//! (`text`), the near name a typo meant (`suggest`), and the errors and exit codes (`error`).

pub mod atomic;
pub mod catalog;
pub mod error;
pub mod event;
pub mod input;
pub mod json;
pub mod message;
pub mod metric;
pub mod record;
pub mod suggest;
pub mod text;
