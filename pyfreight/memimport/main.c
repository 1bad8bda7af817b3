/*
 * main() of a pyfreight executable whose standard library is linked in (docs/memory-importer.md).
 *
 * Initialization runs in two phases so that the in-memory finder is on sys.meta_path before the
 * first import of a non-frozen stdlib module (encodings, during the main phase):
 *   1. Py_InitializeFromConfig() with _init_main = 0: the core phase, where only the built-in and
 *      frozen importers exist;
 *   2. _pyfreight_memory.install();
 *   3. Py_InitializeFromConfig() again with _init_main = 1: the runtime is already initialized, so
 *      pyinit_core() takes its reconfigure path and then runs pyinit_main().  This works on 3.13
 *      (which still has _Py_InitializeMain) and on 3.14+ (which removed it).
 * The path configuration is given in full (home, stdlib_dir, module search path) so getpath never
 * searches the filesystem for landmarks; sys.path holds only the virtual root, the executable itself.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

PyMODINIT_FUNC PyInit__pyfreight_memory(void);

/* The executable's real path; argv[0] may be relative, a symlink or found through $PATH. */
static int
self_path(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) {
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

/* <prefix>/bin/exe -> <prefix>; any other layout -> the executable's directory. */
static void
prefix_of(const char *exe, char *out, size_t size)
{
    snprintf(out, size, "%s", exe);
    char *slash = strrchr(out, '/');
    if (slash == NULL) {
        snprintf(out, size, ".");
        return;
    }
    *slash = '\0';
    const char *dir = strrchr(out, '/');
    if (dir != NULL && strcmp(dir + 1, "bin") == 0) {
        if (dir == out) {
            out[1] = '\0';
        }
        else {
            *(char *)dir = '\0';
        }
    }
    if (out[0] == '\0') {
        snprintf(out, size, "/");
    }
}

static PyStatus
set_path(PyConfig *config, wchar_t **field, const char *value)
{
    return PyConfig_SetBytesString(config, field, value);
}

static PyStatus
configure(PyConfig *config, int argc, char **argv, const char *exe, const char *prefix)
{
    PyStatus status;
    config->parse_argv = 1;
    status = PyConfig_SetBytesArgv(config, argc, argv);
    if (PyStatus_Exception(status)) {
        return status;
    }
    /* executable and home given: getpath skips the $PATH search, ._pth files and build-directory
       detection; it still reads pyvenv.cfg next to the executable (see the docs). */
    if (PyStatus_Exception(status = set_path(config, &config->executable, exe))
        || PyStatus_Exception(status = set_path(config, &config->home, prefix))
        || PyStatus_Exception(status = set_path(config, &config->prefix, prefix))
        || PyStatus_Exception(status = set_path(config, &config->exec_prefix, prefix))
        || PyStatus_Exception(status = set_path(config, &config->base_prefix, prefix))
        || PyStatus_Exception(status = set_path(config, &config->base_exec_prefix, prefix))
        /* Frozen stdlib modules (os, site, ...) get __file__ = <exe>/os.py, matching the packed ones. */
        || PyStatus_Exception(status = set_path(config, &config->stdlib_dir, exe))) {
        return status;
    }
    wchar_t *root = Py_DecodeLocale(exe, NULL);
    if (root == NULL) {
        return PyStatus_NoMemory();
    }
    config->module_search_paths_set = 1;
    status = PyWideStringList_Append(&config->module_search_paths, root);
    PyMem_RawFree(root);
    return status;
}

/* getpath ignores $PYTHONPATH once the search path is given, so honour it here as the normal
   interpreter would: its entries, made absolute, go before the virtual root, unless -E or -I.
   sys.flags already reflects the command line once the core phase is done. */
static PyStatus
search_path_with_pythonpath(PyConfig *config, const char *exe)
{
    PyObject *flags = PySys_GetObject("flags"); /* borrowed */
    PyObject *ignore = flags ? PyObject_GetAttrString(flags, "ignore_environment") : NULL;
    if (ignore == NULL) {
        PyErr_Clear();
        return PyStatus_Error("cannot read sys.flags.ignore_environment");
    }
    int ignored = PyObject_IsTrue(ignore);
    Py_DECREF(ignore);
    const char *env = getenv("PYTHONPATH");
    if (ignored || env == NULL || env[0] == '\0') {
        return PyStatus_Ok();
    }
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) {
        cwd[0] = '\0';
    }
    PyWideStringList paths = {0, NULL};
    PyStatus status = PyStatus_Ok();
    const char *p = env;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char entry[PATH_MAX];
        /* Like getpath's abspath(): relative entries (and the empty one) are joined to the cwd. */
        int written = p[0] == '/' ? snprintf(entry, sizeof entry, "%.*s", (int)n, p)
                                  : snprintf(entry, sizeof entry, "%s%s%.*s", cwd, n ? "/" : "", (int)n, p);
        if (written > 0 && (size_t)written < sizeof entry) {
            wchar_t *wide = Py_DecodeLocale(entry, NULL);
            if (wide == NULL) {
                status = PyStatus_NoMemory();
                goto done;
            }
            status = PyWideStringList_Append(&paths, wide);
            PyMem_RawFree(wide);
            if (PyStatus_Exception(status)) {
                goto done;
            }
        }
        if (colon == NULL) {
            break;
        }
        p = colon + 1;
    }
    wchar_t *root = Py_DecodeLocale(exe, NULL);
    if (root == NULL) {
        status = PyStatus_NoMemory();
        goto done;
    }
    status = PyWideStringList_Append(&paths, root);
    PyMem_RawFree(root);
    if (!PyStatus_Exception(status)) {
        status = PyConfig_SetWideStringList(config, &config->module_search_paths, paths.length, paths.items);
    }
done:
    for (Py_ssize_t i = 0; i < paths.length; i++) {
        PyMem_RawFree(paths.items[i]);
    }
    PyMem_RawFree(paths.items);
    return status;
}

static int
install_finder(void)
{
    PyObject *mod = PyImport_ImportModule("_pyfreight_memory");
    if (mod == NULL) {
        return -1;
    }
    PyObject *finder = PyObject_CallMethod(mod, "install", NULL);
    Py_DECREF(mod);
    if (finder == NULL) {
        return -1;
    }
    Py_DECREF(finder);
    return 0;
}

int
main(int argc, char **argv)
{
    char exe[PATH_MAX];
    char prefix[PATH_MAX];
    if (self_path(exe, sizeof exe) < 0) {
        fprintf(stderr, "%s: cannot read /proc/self/exe\n", argc > 0 ? argv[0] : "python");
        return 1;
    }
    prefix_of(exe, prefix, sizeof prefix);

    if (PyImport_AppendInittab("_pyfreight_memory", PyInit__pyfreight_memory) < 0) {
        fprintf(stderr, "%s: cannot register _pyfreight_memory\n", exe);
        return 1;
    }

    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    PyStatus status = configure(&config, argc, argv, exe, prefix);
    if (PyStatus_Exception(status)) {
        goto fail;
    }

    config._init_main = 0;
    status = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(status)) {
        goto fail;
    }
    if (install_finder() < 0) {
        PyErr_Print();
        PyConfig_Clear(&config);
        Py_Finalize();
        return 1;
    }
    status = search_path_with_pythonpath(&config, exe);
    if (PyStatus_Exception(status)) {
        goto fail;
    }
    config._init_main = 1;
    status = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(status)) {
        goto fail;
    }
    PyConfig_Clear(&config);
    return Py_RunMain();

fail:
    PyConfig_Clear(&config);
    if (PyStatus_IsExit(status)) {
        return status.exitcode;
    }
    Py_ExitStatusException(status);
}
