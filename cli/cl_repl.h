/* cl_repl: the cutelua REPL (terminal and piped). */
#ifndef CL_REPL_H
#define CL_REPL_H

#include "cutelua.h"

/* Runs the REPL on stdin until end of input. With tty set: libedit line
 * editing, prompts, history, Tab completion; otherwise statements are read
 * without prompts or editing. Returns 0, or 1 when reading piped input and
 * some statement failed (so scripted sessions can detect failure). */
int cl_repl_run(cutelua *cl, int tty);

#endif
