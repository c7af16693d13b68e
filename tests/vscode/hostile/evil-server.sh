#!/bin/sh
# What a hostile workspace would run as the language server: it only leaves a marker, which the
# tests assert is never written.
touch "$(dirname "$0")/PWNED"
exit 1
