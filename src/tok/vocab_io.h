// vocab_io: reads and writes vocabulary files. Reads GPT-2's encoder.json + vocab.bpe, tiktoken rank files
// (r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base, with the special tokens and pre-tokenizer
// each encoding uses) and sextant's own versioned, checksummed vocabulary file. Any of them may be gzipped.
// Not responsible for encoding (bpe) or training (bpe_train).
//
// sextant vocabulary file, little-endian:
//   "SXVOCAB\0" | u32 version (1) | u32 pretok kind | u32 n_ids | u32 name length | name bytes |
//   n_ids x (u8 kind (0 unused, 1 normal, 2 special) | u32 length | bytes) | u32 crc32 of all the above
#ifndef SEXTANT_TOK_VOCAB_IO_H
#define SEXTANT_TOK_VOCAB_IO_H
#include "tok/bpe.h"

#define VOCAB_FILE_VERSION 1

// The most a vocabulary file may hold once decompressed (o200k_base's rank file is 3.6 MB).
#define VOCAB_MAX_BYTES ((size_t)64 << 20)

// Reads a whole (possibly gzipped) file into out (overwritten).
sx_status vocab_read_file(const char *path, tok_bytes *out);
// The same, checked while it decompresses: at most cap bytes; magic NULL: anything, "": text (no NUL
// byte), else the content starts with magic and its NUL. Errors: SX_ERR_FORMAT naming path.
sx_status vocab_read_checked(const char *path, size_t cap, const char *magic, tok_bytes *out);
// GPT-2: dir holds encoder.json and vocab.bpe (or .gz of each). Checks that merge i makes token 256+i,
// so tiktoken-style rank merging reproduces GPT-2 exactly.
sx_status vocab_load_gpt2(const char *dir, bpe_vocab **out);
// tiktoken rank file; encoding is "r50k_base", "p50k_base", "p50k_edit", "cl100k_base" or "o200k_base"
// (NULL: taken from the file name).
sx_status vocab_load_tiktoken(const char *path, const char *encoding, bpe_vocab **out);
// sextant's own file.
sx_status vocab_load_sx(const char *path, bpe_vocab **out);
sx_status vocab_save_sx(const bpe_vocab *v, const char *path);
// Picks the loader from the spec: a directory -> GPT-2; "*.tiktoken[.gz]" -> tiktoken (name from the file
// name); "ENCODING:path" -> tiktoken with that encoding; anything else -> sextant's file.
sx_status vocab_load(const char *spec, bpe_vocab **out);
// The vocabulary a token shard was written with: the first sextant vocabulary file (*.sxv) in the shard's
// directory whose content hash is hash (the shard header's vocab_hash). Its path goes to out; returns
// false (out = "") when there is none.
bool vocab_find_beside(const char *shard_path, uint64_t hash, char *out, size_t size);

#endif
