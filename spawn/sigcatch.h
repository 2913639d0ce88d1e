#ifndef SE_SIGCATCH_H
#define SE_SIGCATCH_H
int se_catch_signals(int fd, const int *sigs, int n);
void se_release_signals(void);
#endif
