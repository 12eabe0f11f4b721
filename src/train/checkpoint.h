// checkpoint: a model's parameters plus optimizer state and free-form training metadata in one tensor file
// (core/tensorfile: versioned, checksummed, written atomically). Loading checks that the file belongs to
// this model (descriptor, vocabulary, every tensor's shape). Not responsible for what the metadata means.
#ifndef SEXTANT_TRAIN_CHECKPOINT_H
#define SEXTANT_TRAIN_CHECKPOINT_H
#include <jansson.h>
#include "core/status.h"
#include "model/model.h"
#include "optim/optimizer.h"

// Writes path atomically. o may be NULL (weights only). meta (borrowed, may be NULL) is stored under
// "train"; the model config under "model".
sx_status checkpoint_save(const char *path, const model *m, const optimizer *o, json_t *meta);
// Restores parameters (and optimizer state and step counter when o is non-NULL) from path into an
// initialised model of the same configuration. *meta_out (may be NULL) receives a new reference to the
// "train" metadata. On error m and o may be partly overwritten only if the file passed validation.
sx_status checkpoint_load(const char *path, model *m, optimizer *o, json_t **meta_out);
// Copies only the parameters of path into m (another run's weights as a starting point): every tensor of m
// must be in the file with exactly its shape, and the file may hold no parameter m lacks; the descriptors
// may differ. Refused (SX_ERR_MISMATCH, naming the first differing tensor) with m untouched otherwise.
sx_status checkpoint_load_weights(const char *path, model *m);
// Reads only the model descriptor and vocabulary stored in a checkpoint (to build the model first).
sx_status checkpoint_peek_model(const char *path, char *descriptor, size_t descriptor_size, size_t *vocab);
// The model a checkpoint holds, built from its stored configuration with the weights loaded (no optimizer
// state): *m is initialised on success (model_free it) and zeroed on error.
sx_status checkpoint_open_model(const char *path, model *m);

#endif
