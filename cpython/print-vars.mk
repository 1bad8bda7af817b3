# Read after CPython's Makefile (make -f Makefile -f print-vars.mk). export-build.sh:
# prints, one per line as NAME=value, the variables the driver describes the build with
# (objects of the core and of the modules, libraries each module and the core link).
PYFREIGHT_VARS = LIBRARY_OBJS MODOBJS MODLIBS LIBS SYSLIBS LINKFORSHARED MODBUILT_NAMES \
	$(filter MODULE_%_LDFLAGS,$(.VARIABLES))

pyfreight-print-vars:
	@$(foreach v,$(sort $(PYFREIGHT_VARS)),$(info $(v)=$(strip $($(v)))))

# A bolt build from a saved profile (build.sh): the Makefile's own llvm-bolt command of
# profile-bolt-stamp, with its flags, on the un-BOLTed interpreter and the profile.
pyfreight-bolt-apply:
	$(LLVM_BOLT) python.prebolt -o python.bolt -data=python.fdata $(BOLT_APPLY_FLAGS)
	mv python.bolt python
