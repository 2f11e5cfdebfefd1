# tests/e2e — pytest end-to-end tests: real gpuprobed, real BPF, as root.
# Debian's python3-pytest, run by Debian's python3 (not whatever python3 is first on PATH).
E2E_ARGS ?=
e2e: all
	$(PYTHON) -m pytest -v -ra tests/e2e $(E2E_ARGS)
