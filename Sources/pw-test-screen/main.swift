// The synthetic PipeWire screen lives in C (CPipeWireShim/pw_test_screen.c); this only forwards argv.
import CPipeWireShim
import Glibc

exit(bk_pw_test_screen_main(CommandLine.argc, CommandLine.unsafeArgv))
