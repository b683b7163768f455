"""The command line: parse, call one core function, render its result, return an exit code."""

#: the environment variable click's completion scripts set when they call patchctl back: here, not
#: in ``completion`` (which loads click), for the script's early read of a migrate (migrate.early)
COMPLETE_VAR = "_PATCHCTL_COMPLETE"
