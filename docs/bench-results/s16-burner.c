#include <time.h>
#include <stdlib.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int c,char**v){double spin=atof(v[1])/1e6, period=atof(v[2])/1e6; for(;;){double t=now(); while(now()-t<spin); struct timespec s={0,(long)(period*1e9)}; nanosleep(&s,0);} }
