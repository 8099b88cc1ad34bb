//! COMMAND [COUNT | INFO | DOCS | GETKEYS | GETKEYSANDFLAGS | LIST | HELP]

use bytes::Bytes;

use super::{Ctx, Outcome};

pub fn run(_: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    Outcome::Reply(crate::command_cmd::run(args, |p, s| {
        crate::glob::glob_match(p, s, true)
    }))
}
