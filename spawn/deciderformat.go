package spawn

/*
#include "decider.h"
*/
import "C"

import "time"

// The resident decider's side of decider.h: the variable that names its
// socket, its request's format, and how long a run waits for its answer.
// Package decider parses what spawn/decider.c sends; the facts they share
// are these, from the one header.
const (
	DeciderEnv        = C.SE_DECIDER_ENV
	DeciderMagic      = C.SE_DECIDER_MAGIC
	DeciderVersion    = C.SE_DECIDER_VERSION
	DeciderHeaderSize = C.SE_DECIDER_HEADER_SIZE
	DeciderMaxRequest = C.SE_DECIDER_MAX_REQUEST
	DeciderWait       = C.SE_DECIDER_WAIT_SECONDS * time.Second
)
