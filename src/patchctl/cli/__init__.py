"""The command line: parse, call one core function, render its result, return an exit code."""
