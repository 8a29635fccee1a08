//! Merkle hash trees for content integrity (RFC 7574 §5 and the digest's §2).
//!
//! - Leaf `i` is `H(chunk i)` at the chunk's real length (the last chunk may be short).
//! - The tree is the smallest balanced one covering the `n` leaves, rooted at
//!   [`Bin::covering(n)`](crate::Bin::covering), numbered like bins.
//! - Leaves past the end are all-zero hashes, and a parent of two all-zero children is
//!   all-zero (not `H(0‖0)`); any other parent is `H(left‖right)`.
//! - A single chunk's root is `H(chunk)`. The peaks are the maximal complete subtrees
//!   ([`Bin::peaks`](crate::Bin::peaks)), one per set bit of `n`.
//!
//! [`MerkleTree`] is the sender's complete tree; [`VerifyingTree`] is the receiver's
//! partial tree of verified hashes; [`tree_file`] stores a tree in a file a receiver reads
//! by HTTP Range.

mod error;
mod hash;
pub mod length_proof;
mod store;
mod tree;
pub mod tree_file;
mod verify;

pub use error::{MerkleError, VerifyError};
pub use hash::{Hash, HashAlgorithm, MAX_HASH_SIZE, ParseHashAlgorithmError};
pub use length_proof::{ContentLength, LengthCheck, WrongLength};
pub use tree::{MerkleBuilder, MerkleTree};
pub use verify::VerifyingTree;
