//! The merger's test cases again, with groups executed on the submitting threads
//! (`MergerOptions::inline_execution`): the same ordering, acknowledgement and failure
//! guarantees must hold.

mod common;

const INLINE: bool = true;

include!("cases/merger.rs");
