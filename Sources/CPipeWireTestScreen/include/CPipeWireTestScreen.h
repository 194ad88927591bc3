#ifndef BK_PW_TEST_SCREEN_H
#define BK_PW_TEST_SCREEN_H
/* The synthetic PipeWire screen used by tests and benchmarks (the pw-test-screen tool).
   Its own target, so the shipped broadcast binary does not link it. */
int bk_pw_test_screen_main(int argc, char **argv);
#endif
