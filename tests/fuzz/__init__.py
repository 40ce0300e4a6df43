"""The project's fuzzers: IR mutation of the lit inputs (`tidu-opt`, `tidu-run`),
differential testing of random `tnp` programs, concurrency stress and large
inputs. `docs/fuzzing.md` says how to run longer campaigns."""
