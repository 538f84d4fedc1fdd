/* The end of every unit test's main(): run the suite (forking per test, so a
 * crash fails one test, not the program) and turn failures into the exit
 * status. */
#ifndef DPC_CHECK_RUN_H
#define DPC_CHECK_RUN_H

#include <check.h>

static inline int check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

#endif
