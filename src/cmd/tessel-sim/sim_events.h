/* sim_events.h - `tessel-sim events`: the event-driven mode of tessel-sim
 * (queues, quotas, fair share, preemption over the trace's arrivals and
 * departures).  Called from main.c's dispatch with argv[0] == "events".
 */
#ifndef TESSEL_SIM_EVENTS_H
#define TESSEL_SIM_EVENTS_H

/* Runs the event mode; returns the process exit status (0 ok, 1 error,
 * 2 usage).  Prints the report on stdout, errors on stderr. */
int tessel_sim_events(int argc, char **argv);

#endif
