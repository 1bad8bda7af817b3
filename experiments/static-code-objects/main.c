/* main.c - a python-like driver with the static code objects linked in.
   Usage: dfpython [python CLI args...]   (behaves like python3.14; see module _dfcode) */
#include <Python.h>
#include <time.h>

extern int df_init_module(int idx);
extern int df_init_all(void);
extern PyObject *df_get_code(const char *name);
extern int df_find(const char *name);
extern const char *df_module_name(int i);
extern const int df_nmodules;

static long long now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static PyObject *dfc_get(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    PyObject *co = df_get_code(name);
    if (co == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    return Py_NewRef(co);
}
static PyObject *dfc_names(PyObject *self, PyObject *unused) {
    PyObject *l = PyList_New(0);
    for (int i = 0; i < df_nmodules; i++) {
        PyObject *s = PyUnicode_FromString(df_module_name(i));
        PyList_Append(l, s); Py_DECREF(s);
    }
    return l;
}
/* returns elapsed ns for initialising all static code objects (eager init) */
static PyObject *dfc_init_all(PyObject *self, PyObject *unused) {
    long long t0 = now_ns();
    if (df_init_all() < 0) return NULL;
    return PyLong_FromLongLong(now_ns() - t0);
}
#ifdef DF_PROFILE
extern long long df_prof_ns[3];
static PyObject *dfc_prof(PyObject *self, PyObject *unused) { return Py_BuildValue("(LLL)", df_prof_ns[0], df_prof_ns[1], df_prof_ns[2]); }
#endif
static PyObject *dfc_now(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(now_ns()); }

static PyMethodDef dfc_methods[] = {
    {"get", dfc_get, METH_O, "static code object for module name, or None"},
    {"names", dfc_names, METH_NOARGS, "list of module names"},
    {"init_all", dfc_init_all, METH_NOARGS, "init all static code objects; returns ns"},
    {"now_ns", dfc_now, METH_NOARGS, "CLOCK_MONOTONIC ns"},
#ifdef DF_PROFILE
    {"prof", dfc_prof, METH_NOARGS, "ns spent in (interning, frozensets, code init)"},
#endif
    {NULL}
};
static struct PyModuleDef dfc_def = { PyModuleDef_HEAD_INIT, "_dfcode", NULL, -1, dfc_methods };
static PyObject *PyInit__dfcode(void) { return PyModule_Create(&dfc_def); }

int main(int argc, char **argv) {
    if (PyImport_AppendInittab("_dfcode", PyInit__dfcode) < 0) return 1;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    PyStatus st = PyConfig_SetBytesArgv(&config, argc, argv);
    if (PyStatus_Exception(st)) goto fail;
    st = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(st)) goto fail;
    PyConfig_Clear(&config);
    return Py_RunMain();
fail:
    PyConfig_Clear(&config);
    Py_ExitStatusException(st);
}
