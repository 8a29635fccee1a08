//! Sign All: a chunk's signature received ahead of the chunk, kept on its channel until
//! the chunk arrives.

#[derive(Clone, Debug)]
pub(super) struct ChunkSignature {
    pub chunk: u64,
    pub timestamp: u64,
    pub signature: Vec<u8>,
}
