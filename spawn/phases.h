/*
 * Where a warm run's time goes. With SANDBOX_EXECUTABLE_WARM=debug the
 * warm path ends a run it carried out with one line on stderr naming each
 * of its phases and the microseconds it took, from the first constructor
 * to the helper's exit; otherwise nothing is recorded. Only the process
 * that runs the constructors records (never a child of the spawn stage).
 */
#ifndef SE_PHASES_H
#define SE_PHASES_H

/* se_phases_begin starts the clock when the environment asks for debug
 * output; the first constructor calls it. */
void se_phases_begin(void);
/* se_phase closes the phase that began at the previous mark, as name (a
 * string literal). */
void se_phase(const char *name);
/* se_phases_warm_run says whether the run is the warm path's (the runner
 * also carries out runs Go decided, whose time this does not describe):
 * 1 before the warm path's runner starts, 0 when it returns to Go. */
void se_phases_warm_run(int warm);
/* se_phases_say writes the line (a no-op when not recording, or for a run
 * Go decided). */
void se_phases_say(void);

#endif
