//! ACL users with Redis 7.0's rules, checks and texts.
//!
//! A user has a name, an on/off switch, passwords kept only as SHA-256 digests (or `nopass`),
//! and one or more *selectors*: the root one written at top level plus any `(...)` ones. A
//! selector allows commands (bits per command and subcommand, set by `+cmd`, `-cmd`, `+@cat`,
//! `-@cat`, `+cmd|sub`), keys (`~pattern` for read and write, `%R~` read, `%W~` write) and
//! channels (`&pattern`: PUBLISH's and the subscribe family's channels, as Redis 7.0 checks
//! them). A command runs if any selector allows it with all its keys, found as the command's
//! declaration says, and all its channels; a change that takes a channel away from a user
//! disconnects its subscribers to it ([`crate::pubsub::Hub::enforce_acl`]).
//!
//! Commands and categories are the command declarations' ([`crate::command_table`]). How a
//! user's command rules are printed (`ACL LIST`, `ACL GETUSER`) follows Redis 7.0: not the rules
//! as typed but `+@all`/`-@all`, then the categories that best fit the user's command bits, then
//! single commands, so the text depends on the declared commands.
//!
//! - [`rules`]: reading rules and configuration lines, and the texts of refused ones;
//! - [`selectors`]: what a rule does to a selector, and a selector's checks and text;
//! - [`users`]: users, passwords and the user table;
//! - `catalog`: the declarations indexed for rules;
//! - [`log`]: the ACL log of refusals (ACL LOG).
//!
//! The `ACL` command itself is [`crate::commands::acl`].

mod catalog;
pub mod log;
pub mod rules;
pub mod selectors;
pub mod users;

pub use rules::{parse_user_line, parse_user_spec};
pub use users::{Acl, User};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod vs_redis;
