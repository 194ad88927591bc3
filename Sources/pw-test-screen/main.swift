// The synthetic PipeWire screen lives in C (CPipeWireTestScreen/pw_test_screen.c); this only forwards argv.
import CPipeWireTestScreen
import Glibc

exit(bk_pw_test_screen_main(CommandLine.argc, CommandLine.unsafeArgv))
