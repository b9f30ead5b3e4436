# Packaging (docs/install.md): `make install`, the systemd unit and tmpfiles.d entry in
# contrib/systemd, the Debian packages in debian/.  The install rules are in the top Makefile.
PKG_TESTS := tests/t/t8001-install-layout.t
TESTS += $(PKG_TESTS)
$(PKG_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel $(O)/lib/libtessel-cuda.so
# Packages built from the tree, installed and upgraded in a throwaway Debian 12 root (minutes:
# its own time box, "# test-timeout:" read by tests/lib/run-one).
TESTS += tests/t/t8000-install-upgrade.t
