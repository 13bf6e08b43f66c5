"""Tests of artbot/cli/: the command line: options, help, start-up, the installed tool."""
