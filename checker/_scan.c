/* checker._scan: the checker's hot loops in C, each beside the Python that defines it.

- Scanner: the digest's event loop (checker/digest.py, `_python_digest`);
- overlaps, out_of_order, long_free_periods: the sweeps over one key's sections
  (checker.mutex, checker.fencing, checker.liveness);
- kth_smallest: the nearest-rank latency percentiles (checker.stats).

Why: at a million events the Python loops cost more than msgspec's strict decoding of the
file, and the checker's speed target (issue 10) leaves no room for them. The Python stays
the definition; each function here follows its Python statement by statement, and
tests/test_scan.py holds the two equal on random histories and sections.

The client values are core.op_values's: the module is given, once, the names of the value
fields it reads and the fields and kinds of each operation's value (use_fields, called by
checker/native.py), and checks every field of a value as the Python reads it, whole.

What the loop leaves to Python, by calling back: every error message (a value field of the
wrong type: core.op_values.value_of raises BadValue as the Python loop does), every nemesis
event, a resource answer that says more than "one occupant, no fencing", and new
KeyAttempts. An event or section of a shape this code does not take (made by hand: not the
reader's types, ints beyond int64) raises Irregular, and the caller runs the Python instead,
from the start of the history or the sections. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *Irregular, *OutOfOrder;

enum { INDEX, PROCESS, TYPE, F, TIME, KEY, TOKEN, VALUE, N_FIELDS };
static const char *const FIELD_NAMES[N_FIELDS] = {
    "index", "process", "type", "f", "time", "key", "token", "value",
};
enum { T_INVOKE, T_OK, T_FAIL, T_INFO };
enum { F_ACQUIRE, F_RELEASE, F_EXTEND, F_ENTER, F_EXIT, F_OTHER };

/* Interned names: dict lookups with them hash once. These are no value fields: the
   nemesis's process, and KeyAttempts's attributes. */
static PyObject *s_nemesis, *s_invokes, *s_dones, *s_most_ttl;

/* The value fields this loop reads, by name: core.op_values.scanned_names(), in this order
   (use_fields). */
enum {
    R_TTL_MS, R_DEADLINE, R_DEPTH, R_GRANTS, R_FENCING, R_PLANNED_END, R_OCCUPANCY, R_HIGHEST,
    R_ACCEPTED, R_ERROR, N_READS
};
static PyObject *reads[N_READS];
#define s_ttl_ms reads[R_TTL_MS]
#define s_deadline reads[R_DEADLINE]
#define s_depth reads[R_DEPTH]
#define s_grants reads[R_GRANTS]
#define s_fencing reads[R_FENCING]
#define s_planned_end reads[R_PLANNED_END]
#define s_occupancy reads[R_OCCUPANCY]
#define s_highest reads[R_HIGHEST]
#define s_accepted reads[R_ACCEPTED]
#define s_error reads[R_ERROR]

/* Each operation's value, by (f, type): its fields and what each may hold, as
   core.op_values.fields_of says (use_fields). Null is allowed for every field. */
enum { K_INT, K_STRS, K_BOOL, K_STR };
typedef struct {
    PyObject *name;
    int kind, bounded;
    long long least; /* K_INT: the lowest allowed, when bounded */
} Check;
typedef struct {
    Py_ssize_t n;
    Check *checks;
} Shape;
static Shape shapes[F_OTHER][4];
static int fields_given;

typedef struct {
    PyObject_HEAD
    int ordered; /* a file's batches: refuse time going back, indexes not increasing */
    PyTypeObject *event_type;
    Py_ssize_t offsets[N_FIELDS];
    /* digest.py's locals, shared with Python */
    PyObject *held, *extended, *invoked, *last, *pending, *by_key, *latencies, *ok_latencies,
        *holding, *nested_release, *sections, *resource_errors;
    /* checker.rules: each process's previous operation, whether its leases state a
       deadline, the releases of leases it did not hold */
    PyObject *previous, *gives, *unmatched;
    /* callbacks and types */
    PyObject *key_attempts, *take_answer, *on_nemesis, *value_of, *section, *unset, *refuse;
    /* each lock call answered that a fault may have met: (f, type, process, key, token,
       invoked, answered); digest.py's FaultWindow, as the nemesis callback last said */
    PyObject *calls;
    PyObject *note_error; /* Attempts.note_error: an error text that ended an acquire */
    int fault_open;
    long long fault_last;
    long long events, nemesis, counts[4], extends[4], cycles;
    long long lo, hi, last_time, last_index;
} Scanner;

#define FIELD(self, ev, i) (*(PyObject **)((char *)(ev) + (self)->offsets[i]))

static int
is(PyObject *s, const char *literal, Py_ssize_t n)
{
    return PyUnicode_GET_LENGTH(s) == n && PyUnicode_KIND(s) == PyUnicode_1BYTE_KIND &&
           memcmp(PyUnicode_1BYTE_DATA(s), literal, (size_t)n) == 0;
}

static int
type_code(PyObject *s)
{
    if (!PyUnicode_CheckExact(s)) return -1;
    if (is(s, "invoke", 6)) return T_INVOKE;
    if (is(s, "ok", 2)) return T_OK;
    if (is(s, "fail", 4)) return T_FAIL;
    if (is(s, "info", 4)) return T_INFO;
    return -1;
}

static int
f_code(PyObject *s)
{
    if (is(s, "acquire", 7)) return F_ACQUIRE;
    if (is(s, "release", 7)) return F_RELEASE;
    if (is(s, "extend", 6)) return F_EXTEND;
    if (is(s, "enter", 5)) return F_ENTER;
    if (is(s, "exit", 4)) return F_EXIT;
    return F_OTHER;
}

static int
int64_of(PyObject *o, long long *out)
{
    int overflow;
    if (!PyLong_CheckExact(o)) return 0;
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    return !overflow;
}

static PyObject *
irregular(Py_ssize_t at)
{
    PyErr_Format(Irregular, "event %zd of the batch is not of the reader's shape", at);
    return NULL;
}

/* Every event of the batch is of the shape the reader gives, and (for a file) in order:
   checked before any of it is digested, as the reader checks a batch before yielding it. */
static int
check_batch(Scanner *self, PyObject **items, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ev = items[i];
        long long t, index;
        if (!Py_IS_TYPE(ev, self->event_type)) return irregular(i), -1;
        for (int k = 0; k < N_FIELDS; k++)
            if (FIELD(self, ev, k) == NULL) return irregular(i), -1;
        PyObject *process = FIELD(self, ev, PROCESS), *key = FIELD(self, ev, KEY),
                 *token = FIELD(self, ev, TOKEN), *value = FIELD(self, ev, VALUE);
        if (!int64_of(FIELD(self, ev, INDEX), &index) || !int64_of(FIELD(self, ev, TIME), &t) ||
            type_code(FIELD(self, ev, TYPE)) < 0 || !PyUnicode_CheckExact(FIELD(self, ev, F)) ||
            !(PyLong_CheckExact(process) ||
              (PyUnicode_CheckExact(process) && is(process, "nemesis", 7))) ||
            !(key == Py_None || PyUnicode_CheckExact(key)) ||
            !(token == Py_None || PyUnicode_CheckExact(token)) ||
            !(value == Py_None || PyDict_CheckExact(value)))
            return irregular(i), -1;
        if (self->ordered) {
            if (t < self->last_time || index <= self->last_index) {
                PyErr_SetString(OutOfOrder, "a history out of order");
                return -1;
            }
            self->last_time = t, self->last_index = index;
        }
        if (self->events == 0 && i == 0) self->lo = self->hi = t;
        if (t < self->lo) self->lo = t;
        if (t > self->hi) self->hi = t;
    }
    return 0;
}

/* value.get(name), borrowed; NULL with no error when absent */
static PyObject *
get(PyObject *value, PyObject *name)
{
    return value == Py_None ? NULL : PyDict_GetItemWithError(value, name);
}

static int
nonempty(PyObject *value)
{
    return value != Py_None && PyDict_GET_SIZE(value) > 0;
}

/* An int at least `least`: 1, else 0 (an exact int: checked before). */
static int
at_least(PyObject *o, long long least)
{
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(o, &overflow);
    return overflow > 0 || (overflow == 0 && n >= least);
}

/* A list (or tuple) of exact strs. */
static int
strings(PyObject *o)
{
    if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o)) return 0;
    PyObject **items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
        if (!PyUnicode_CheckExact(items[i])) return 0;
    return 1;
}

static int
of_kind(PyObject *raw, const Check *check)
{
    switch (check->kind) {
    case K_INT: return PyLong_CheckExact(raw) && (!check->bounded || at_least(raw, check->least));
    case K_STRS: return strings(raw);
    case K_BOOL: return raw == Py_True || raw == Py_False;
    default: return PyUnicode_CheckExact(raw);
    }
}

/* core.op_values.read, checked here: 0 when each field of the value `ev` has for its (f,
   type) is absent, null or of its kind (the loop then reads them unchecked); else
   value_of(ev) raises BadValue naming the first bad one, and -1. */
static int
check_value(Scanner *self, PyObject *ev, PyObject *value, int f, int type)
{
    const Shape *shape = &shapes[f][type];
    if (shape->n == 0 || !nonempty(value)) return 0;
    for (Py_ssize_t i = 0; i < shape->n; i++) {
        PyObject *raw = PyDict_GetItemWithError(value, shape->checks[i].name);
        if (raw == NULL) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (raw == Py_None || of_kind(raw, &shape->checks[i])) continue;
        PyObject *r = PyObject_CallOneArg(self->value_of, ev);
        if (r == NULL) return -1;
        Py_DECREF(r); /* it took the value: a shape this loop misjudged */
        PyErr_SetString(Irregular, "a value field core.op_values took");
        return -1;
    }
    return 0;
}

/* checker.rules.refuse: raises Impossible for `ev` breaking `rule` (measured against
   `earlier`, or NULL); always -1. */
static int
refuse(Scanner *self, const char *rule, PyObject *ev, PyObject *earlier)
{
    PyObject *r = PyObject_CallFunction(self->refuse, "sOO", rule, ev, earlier ? earlier : Py_None);
    if (r == NULL) return -1;
    Py_DECREF(r);
    PyErr_SetString(Irregular, "refuse returned");
    return -1;
}

/* a == b for a key or token: None or an exact str */
static int
same_text(PyObject *a, PyObject *b)
{
    if (a == b) return 1;
    if (a == Py_None || b == Py_None) return 0;
    return PyUnicode_Compare(a, b) == 0;
}

/* An int below 0: 1, else 0 (not an int: 0; its type is checked where it is read). */
static int
negative(PyObject *o)
{
    int overflow;
    if (!PyLong_CheckExact(o)) return 0;
    long long n = PyLong_AsLongLongAndOverflow(o, &overflow);
    return overflow < 0 || (overflow == 0 && n < 0);
}

/* digest.py's `gives.setdefault(process, has) is not has`: 1 when the process's leases
   said otherwise before, 0, -1 on error */
static int
gives_otherwise(Scanner *self, PyObject *process, int has)
{
    PyObject *said = has ? Py_True : Py_False;
    PyObject *known = PyDict_SetDefault(self->gives, process, said);
    return known == NULL ? -1 : known != said;
}

/* A checked field (check_value): its value, None when absent; a new reference, NULL on
   error */
static PyObject *
checked_field(PyObject *value, PyObject *name)
{
    PyObject *raw = get(value, name);
    if (raw == NULL && PyErr_Occurred()) return NULL;
    return Py_NewRef(raw == NULL ? Py_None : raw);
}

/* The checked depth (absent, null or an int from 1) above 1: 1 or 0, -1 on error */
static int
deeper(PyObject *value)
{
    PyObject *raw = get(value, s_depth);
    if (raw == NULL) return PyErr_Occurred() ? -1 : 0;
    return raw != Py_None && at_least(raw, 2);
}

static int
append_to(PyObject *owner, PyObject *attribute, PyObject *item)
{
    PyObject *list = PyObject_GetAttr(owner, attribute);
    if (list == NULL) return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(list);
    return r;
}

/* dict.pop(key, None): a new reference, NULL with no error when absent */
static PyObject *
pop(PyObject *dict, PyObject *key)
{
    PyObject *found = PyDict_GetItemWithError(dict, key);
    if (found == NULL) return NULL;
    Py_INCREF(found);
    if (PyDict_DelItem(dict, key) < 0) return Py_DECREF(found), NULL;
    return found;
}

static int
acquire(Scanner *self, PyObject *ev, int type, PyObject *process, PyObject *t,
        PyObject *earlier)
{
    PyObject *key = FIELD(self, ev, KEY), *token = FIELD(self, ev, TOKEN),
             *value = FIELD(self, ev, VALUE);
    if (type == T_INVOKE) {
        self->counts[T_INVOKE]++;
        if (PyDict_SetItem(self->invoked, process, t) < 0) return -1;
        PyObject *abandoned = PyDict_GetItemWithError(self->pending, process);
        if (abandoned == NULL && PyErr_Occurred()) return -1;
        if (abandoned != NULL && append_to(abandoned, s_dones, t) < 0) return -1;
        PyObject *attempts = PyDict_GetItemWithError(self->by_key, key);
        if (attempts == NULL) {
            if (PyErr_Occurred()) return -1;
            PyObject *made = PyObject_CallNoArgs(self->key_attempts);
            if (made == NULL) return -1;
            int r = PyDict_SetItem(self->by_key, key, made);
            Py_DECREF(made);
            if (r < 0) return -1;
            attempts = made; /* the dict holds it */
        }
        if (PyDict_SetItem(self->pending, process, attempts) < 0) return -1;
        if (append_to(attempts, s_invokes, t) < 0) return -1;
        if (!nonempty(value)) return 0;
        PyObject *ttl = get(value, s_ttl_ms);
        if (ttl == NULL) return PyErr_Occurred() ? -1 : 0;
        if (ttl == Py_None) return 0;
        PyObject *most = PyObject_GetAttr(attempts, s_most_ttl);
        if (most == NULL) return -1;
        int above = most == Py_None ? 1 : PyObject_RichCompareBool(ttl, most, Py_GT);
        Py_DECREF(most);
        if (above < 0) return -1;
        return above ? PyObject_SetAttr(attempts, s_most_ttl, ttl) : 0;
    }
    PyObject *latency = NULL, *paired = pop(self->pending, process);
    if (paired == NULL && PyErr_Occurred()) return -1;
    if (paired != NULL) {
        int r = append_to(paired, s_dones, t);
        Py_DECREF(paired);
        PyObject *since = r < 0 ? NULL : PyDict_GetItemWithError(self->invoked, process);
        if (since == NULL) return PyErr_Occurred() ? -1 : (irregular(0), -1);
        latency = PyNumber_Subtract(t, since);
        if (latency == NULL || PyList_Append(self->latencies, latency) < 0)
            return Py_XDECREF(latency), -1;
    }
    self->counts[type]++;
    if (type != T_OK) {
        Py_XDECREF(latency);
        PyObject *error = type == T_INFO && nonempty(value) ? get(value, s_error) : NULL;
        if (error == NULL) return PyErr_Occurred() ? -1 : 0;
        PyObject *r = PyObject_CallOneArg(self->note_error, error);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    if (latency != NULL) {
        int r = PyList_Append(self->ok_latencies, latency);
        Py_DECREF(latency);
        if (r < 0) return -1;
    }
    PyObject *owned = PyTuple_Pack(2, process, token);
    if (owned == NULL) return -1;
    int r = PySet_Add(self->holding, owned);
    Py_DECREF(owned);
    if (r < 0) return -1;
    PyObject *deadline = Py_None, *grants = NULL, *fencing = NULL, *opened = NULL, *lease = NULL;
    int depth_above_one = 0;
    if (nonempty(value)) {
        deadline = get(value, s_deadline);
        if (deadline == NULL && PyErr_Occurred()) return -1;
        if (deadline == NULL) deadline = Py_None;
        if ((depth_above_one = deeper(value)) < 0) return -1;
        if ((fencing = checked_field(value, s_fencing)) == NULL) return -1;
        if (negative(fencing)) {
            refuse(self, "fencing", ev, NULL);
            goto fail;
        }
    } else {
        fencing = Py_NewRef(Py_None);
    }
    PyObject *since = PyDict_GetItemWithError(self->invoked, process);
    if (since == NULL) {
        if (!PyErr_Occurred()) irregular(0); /* the sequence rule saw its invoke */
        goto fail;
    }
    if (deadline != Py_None) {
        int before = PyObject_RichCompareBool(deadline, since, Py_LT);
        if (before < 0) goto fail;
        if (before) {
            refuse(self, "deadline-before", ev, earlier);
            goto fail;
        }
    }
    r = gives_otherwise(self, process, deadline != Py_None);
    if (r != 0) {
        if (r > 0) refuse(self, "deadline-sometimes", ev, NULL);
        goto fail;
    }
    lease = PyTuple_Pack(3, process, key, token);
    if (lease == NULL) goto fail;
    r = PyDict_Contains(self->held, lease);
    if (r != 0) { /* a nested acquire, inside the section */
        if (r > 0 && deadline != Py_None && depth_above_one)
            r = PyDict_SetItem(self->extended, lease, deadline);
        if (r < 0) goto fail;
        r = 0;
        goto done;
    }
    PyObject *raw = nonempty(value) ? get(value, s_grants) : NULL;
    if (raw == NULL && PyErr_Occurred()) goto fail;
    if (raw == NULL || raw == Py_None) /* checked: a list or a tuple of strs, or none */
        grants = PyTuple_New(0);
    else
        grants = PyList_CheckExact(raw) ? PyList_AsTuple(raw) : Py_NewRef(raw);
    if (grants == NULL) goto fail;
    opened = PyTuple_Pack(5, ev, deadline, grants, fencing, since);
    if (opened == NULL || PyDict_SetItem(self->held, lease, opened) < 0) goto fail;
    r = 0;
    goto done;
fail:
    r = -1;
done:
    Py_XDECREF(lease);
    Py_XDECREF(grants);
    Py_XDECREF(fencing);
    Py_XDECREF(opened);
    return r;
}

/* digest.py's _close: the section ``opened`` began, ending at ``end``. */
static int
close_section(Scanner *self, PyObject *opened, PyObject *end, PyObject *index, PyObject *moved,
              PyObject *planned)
{
    PyObject *acquired = PyTuple_GET_ITEM(opened, 0);
    PyObject *args[13] = {
        FIELD(self, acquired, KEY),
        FIELD(self, acquired, PROCESS),
        FIELD(self, acquired, TOKEN),
        FIELD(self, acquired, TIME),
        end,
        moved == self->unset ? PyTuple_GET_ITEM(opened, 1) : moved,
        PyTuple_GET_ITEM(opened, 2),
        PyTuple_GET_ITEM(opened, 3),
        FIELD(self, acquired, INDEX),
        index,
        Py_True, /* released */
        PyTuple_GET_ITEM(opened, 4),
        planned,
    };
    PyObject *section = PyObject_Vectorcall(self->section, args, 13, NULL);
    if (section == NULL) return -1;
    int r = PyList_Append(self->sections, section);
    Py_DECREF(section);
    return r;
}

static int
release(Scanner *self, PyObject *ev, int type, PyObject *process, PyObject *t)
{
    PyObject *key = FIELD(self, ev, KEY), *token = FIELD(self, ev, TOKEN),
             *value = FIELD(self, ev, VALUE);
    int r;
    if (type == T_INVOKE) {
        PyObject *planned;
        if (nonempty(value)) {
            int deep = deeper(value);
            if (deep < 0) return -1;
            if (deep) return PySet_Add(self->nested_release, process); /* still inside */
            if ((planned = checked_field(value, s_planned_end)) == NULL) return -1;
        } else {
            planned = Py_NewRef(Py_None);
        }
        PyObject *lease = NULL, *opened = NULL, *moved = NULL;
        r = -1;
        if (PySet_Discard(self->nested_release, process) < 0) goto out;
        if ((lease = PyTuple_Pack(3, process, key, token)) == NULL) goto out;
        opened = pop(self->held, lease);
        if (opened == NULL) { /* closed by a nested release, or never granted: at the end */
            r = PyErr_Occurred() ? -1 : PyList_Append(self->unmatched, ev);
            goto out;
        }
        moved = pop(self->extended, lease);
        if (moved == NULL && PyErr_Occurred()) goto out;
        r = close_section(self, opened, t, FIELD(self, ev, INDEX), moved ? moved : self->unset,
                          planned);
    out:
        Py_DECREF(planned);
        Py_XDECREF(lease);
        Py_XDECREF(opened);
        Py_XDECREF(moved);
        return r;
    }
    if ((r = PySet_Contains(self->nested_release, process)) != 0)
        return r < 0 ? -1 : PySet_Discard(self->nested_release, process) < 0 ? -1 : 0;
    if (type != T_OK) return 0;
    PyObject *owned = PyTuple_Pack(2, process, token);
    if (owned == NULL) return -1;
    r = PySet_Discard(self->holding, owned); /* a duplicated ok is no second cycle */
    Py_DECREF(owned);
    if (r > 0) self->cycles++;
    return r < 0 ? -1 : 0;
}

static int
extend(Scanner *self, PyObject *ev, int type, PyObject *process, PyObject *earlier)
{
    PyObject *value = FIELD(self, ev, VALUE);
    self->extends[type]++;
    if (type != T_OK) return 0;
    PyObject *moved_to = nonempty(value) ? checked_field(value, s_deadline) : Py_NewRef(Py_None);
    if (moved_to == NULL) return -1;
    int r = 0;
    if (moved_to != Py_None) { /* the sequence rule made `earlier` its extend invoke */
        r = PyObject_RichCompareBool(moved_to, FIELD(self, earlier, TIME), Py_LT);
        if (r > 0) r = refuse(self, "deadline-before", ev, earlier);
    }
    if (r == 0) {
        r = gives_otherwise(self, process, moved_to != Py_None);
        if (r > 0) r = refuse(self, "deadline-sometimes", ev, NULL);
    }
    if (r == 0 && nonempty(value)) { /* it moves the deadline, to none if it states none */
        PyObject *lease = PyTuple_Pack(3, process, FIELD(self, ev, KEY), FIELD(self, ev, TOKEN));
        r = lease == NULL ? -1 : PyDict_Contains(self->held, lease);
        if (r > 0) r = PyDict_SetItem(self->extended, lease, moved_to);
        Py_XDECREF(lease);
    }
    Py_DECREF(moved_to);
    return r < 0 ? -1 : 0;
}

/* checker.rules's sequence: a completion answers its process's invoke just before it, of
   the same operation and key (and token, but for an acquire). */
static int
answers(Scanner *self, PyObject *earlier, PyObject *ev, int f)
{
    return earlier != NULL && type_code(FIELD(self, earlier, TYPE)) == T_INVOKE &&
           f_code(FIELD(self, earlier, F)) == f &&
           same_text(FIELD(self, earlier, KEY), FIELD(self, ev, KEY)) &&
           (f == F_ACQUIRE || same_text(FIELD(self, earlier, TOKEN), FIELD(self, ev, TOKEN)));
}

/* An answer take_answer would make nothing of: at most one occupant, no fencing word. */
static int
plain_answer(PyObject *value, int f)
{
    PyObject *names[3] = {s_fencing, s_highest, s_accepted};
    for (int i = 0; i < 3; i++) {
        PyObject *raw = PyDict_GetItemWithError(value, names[i]);
        if (raw == NULL && PyErr_Occurred()) return -1;
        if (raw != NULL && raw != Py_None) return 0;
    }
    if (f != F_ENTER) return 1;
    PyObject *occupancy = PyDict_GetItemWithError(value, s_occupancy);
    if (occupancy == NULL) return PyErr_Occurred() ? -1 : 1;
    if (occupancy == Py_None) return 1;
    if (!PyLong_CheckExact(occupancy)) return 0;
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(occupancy, &overflow);
    return overflow < 0 || (overflow == 0 && n <= 1);
}

static int
answer(Scanner *self, PyObject *ev, int type, int f)
{
    PyObject *value = FIELD(self, ev, VALUE);
    if (type == T_INFO) return PyList_Append(self->resource_errors, ev);
    if (type != T_OK || !nonempty(value)) return 0;
    int plain = plain_answer(value, f);
    if (plain != 0) return plain < 0 ? -1 : 0;
    PyObject *r = PyObject_CallOneArg(self->take_answer, ev);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* digest.py's `last[process] = t` for every client event, once per process a batch: its
   last event in the batch's order is the one that stays. The loop reads `last` only after
   the history ends, so this is the same. */
static int
note_last(Scanner *self, PyObject **items, Py_ssize_t n)
{
    enum { FEW = 64 };
    long long seen[FEW];
    int count = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        PyObject *process = FIELD(self, items[i], PROCESS);
        long long p;
        if (!PyLong_CheckExact(process)) continue; /* the nemesis */
        if (count < FEW && int64_of(process, &p)) {
            int known = 0;
            for (int k = 0; k < count && !known; k++) known = seen[k] == p;
            if (known) continue;
            seen[count++] = p;
            if (PyDict_SetItem(self->last, process, FIELD(self, items[i], TIME)) < 0) return -1;
            continue;
        }
        /* many processes in one batch, or one beyond int64: every event, in order */
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *owner = FIELD(self, items[j], PROCESS);
            if (PyLong_CheckExact(owner) &&
                PyDict_SetItem(self->last, owner, FIELD(self, items[j], TIME)) < 0)
                return -1;
        }
        return 0;
    }
    return 0;
}

/* A lock call answered (acquire, release, extend), as digest.py's loop keeps it:
   checker.moments reads when each was in flight. In a file, only one a fault may have met
   (FaultWindow.met), or answered info. */
static int
note_call(Scanner *self, PyObject *ev, int type, PyObject *invoke, PyObject *t)
{
    if (self->ordered && type != T_INFO && !self->fault_open) {
        long long invoked = PyLong_AsLongLong(FIELD(self, invoke, TIME));
        if (invoked == -1 && PyErr_Occurred()) return -1;
        if (self->fault_last < invoked) return 0;
    }
    PyObject *call = PyTuple_Pack(
        7, FIELD(self, ev, F), FIELD(self, ev, TYPE), FIELD(self, ev, PROCESS),
        FIELD(self, ev, KEY), FIELD(self, ev, TOKEN), FIELD(self, invoke, TIME), t);
    if (call == NULL) return -1;
    int r = PyList_Append(self->calls, call);
    Py_DECREF(call);
    return r;
}

static PyObject *
Scanner_feed(Scanner *self, PyObject *batch)
{
    if (!PyList_CheckExact(batch)) return PyErr_SetString(PyExc_TypeError, "a list"), NULL;
    Py_ssize_t n = PyList_GET_SIZE(batch);
    PyObject **items = PySequence_Fast_ITEMS(batch);
    if (n == 0) Py_RETURN_NONE;
    if (check_batch(self, items, n) < 0) return NULL;
    self->events += n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ev = items[i], *process = FIELD(self, ev, PROCESS), *t = FIELD(self, ev, TIME);
        int type = type_code(FIELD(self, ev, TYPE)), r = 0;
        if (!PyLong_CheckExact(process)) { /* the nemesis: few events, each kept */
            self->nemesis++;
            PyObject *open = PyObject_CallOneArg(self->on_nemesis, ev);
            if (open == NULL) return NULL;
            self->fault_open = PyObject_IsTrue(open);
            Py_DECREF(open);
            if (self->fault_open < 0) return NULL;
            self->fault_last = PyLong_AsLongLong(t);
            if (self->fault_last == -1 && PyErr_Occurred()) return NULL;
            continue;
        }
        int f = f_code(FIELD(self, ev, F));
        if (f == F_OTHER) continue;
        PyObject *earlier = PyDict_GetItemWithError(self->previous, process);
        if (earlier == NULL && PyErr_Occurred()) return NULL;
        Py_XINCREF(earlier); /* the dict lets go of it below */
        if (type != T_INVOKE && !answers(self, earlier, ev, f))
            r = refuse(self, "completion", ev, earlier);
        else
            r = PyDict_SetItem(self->previous, process, ev);
        if (r == 0) r = check_value(self, ev, FIELD(self, ev, VALUE), f, type);
        if (r == 0) {
            switch (f) {
            case F_ACQUIRE: r = acquire(self, ev, type, process, t, earlier); break;
            case F_RELEASE: r = release(self, ev, type, process, t); break;
            case F_EXTEND: r = extend(self, ev, type, process, earlier); break;
            case F_ENTER: r = answer(self, ev, type, F_ENTER); break;
            default: r = answer(self, ev, type, F_EXIT); break;
            }
        }
        if (r == 0 && type != T_INVOKE && f <= F_EXTEND) r = note_call(self, ev, type, earlier, t);
        Py_XDECREF(earlier);
        if (r < 0) return NULL;
    }
    if (note_last(self, items, n) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Scanner_totals(Scanner *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue(
        "{sLsLsLsLsLsLsLsLsLsLsLsLsL}", "events", self->events, "nemesis", self->nemesis,
        "invoke", self->counts[T_INVOKE], "ok", self->counts[T_OK], "fail", self->counts[T_FAIL],
        "info", self->counts[T_INFO], "cycles", self->cycles, "extend_invoke",
        self->extends[T_INVOKE], "extend_ok", self->extends[T_OK], "extend_fail",
        self->extends[T_FAIL], "extend_info", self->extends[T_INFO], "lo", self->lo, "hi",
        self->hi);
}

enum { N_MEMBERS = 24 };

/* The addresses of the Python objects a Scanner holds besides event_type, for traverse and
 * clear; the array's size makes the compiler refuse a list longer than N_MEMBERS. */
static void
members(Scanner *self, PyObject **slots[N_MEMBERS])
{
    PyObject **all[N_MEMBERS] = {
        &self->held, &self->extended, &self->invoked, &self->last, &self->pending,
        &self->by_key, &self->latencies, &self->ok_latencies, &self->holding,
        &self->nested_release, &self->sections, &self->resource_errors, &self->previous,
        &self->gives, &self->unmatched, &self->key_attempts, &self->take_answer,
        &self->on_nemesis, &self->value_of, &self->section, &self->unset, &self->refuse,
        &self->calls, &self->note_error,
    };
    memcpy(slots, all, sizeof all);
}

static int
Scanner_traverse(Scanner *self, visitproc visit, void *arg)
{
    PyObject **slots[N_MEMBERS];
    members(self, slots);
    for (int i = 0; i < N_MEMBERS; i++) Py_VISIT(*slots[i]);
    Py_VISIT(self->event_type);
    return 0;
}

static int
Scanner_clear(Scanner *self)
{
    PyObject **slots[N_MEMBERS];
    members(self, slots);
    for (int i = 0; i < N_MEMBERS; i++) Py_CLEAR(*slots[i]);
    Py_CLEAR(self->event_type);
    return 0;
}

static void
Scanner_dealloc(Scanner *self)
{
    PyObject_GC_UnTrack(self);
    Scanner_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Scanner_init(Scanner *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {
        "ordered", "event_type", "held", "extended", "invoked", "last", "pending", "by_key",
        "latencies", "ok_latencies", "holding", "nested_release", "sections",
        "resource_errors", "previous", "gives", "unmatched", "key_attempts", "take_answer",
        "on_nemesis", "value_of", "section", "unset", "refuse", "calls", "note_error", NULL,
    };
    PyObject *got[N_MEMBERS + 1]; /* event_type, then the members in their order */
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "pO!O!O!O!O!O!O!O!O!O!O!O!O!O!O!O!OOOOOOOO!O", names, &self->ordered,
            &PyType_Type, &got[0], &PyDict_Type, &got[1], &PyDict_Type, &got[2], &PyDict_Type,
            &got[3], &PyDict_Type, &got[4], &PyDict_Type, &got[5], &PyDict_Type, &got[6],
            &PyList_Type, &got[7], &PyList_Type, &got[8], &PySet_Type, &got[9], &PySet_Type,
            &got[10], &PyList_Type, &got[11], &PyList_Type, &got[12], &PyDict_Type, &got[13],
            &PyDict_Type, &got[14], &PyList_Type, &got[15], &got[16], &got[17], &got[18],
            &got[19], &got[20], &got[21], &got[22], &PyList_Type, &got[23], &got[24]))
        return -1;
    if (!fields_given) {
        PyErr_SetString(PyExc_RuntimeError,
                        "checker._scan.use_fields was never called: the loop does not know "
                        "the value fields (checker/native.py gives them from core.op_values)");
        return -1;
    }
    PyTypeObject *event_type = (PyTypeObject *)got[0];
    for (int k = 0; k < N_FIELDS; k++) {
        PyObject *descr = PyDict_GetItemString(event_type->tp_dict, FIELD_NAMES[k]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "event_type has no slot %s", FIELD_NAMES[k]);
            return -1;
        }
        self->offsets[k] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    Scanner_clear(self);
    self->event_type = (PyTypeObject *)Py_NewRef(event_type);
    PyObject **slots[N_MEMBERS];
    members(self, slots);
    for (int i = 0; i < N_MEMBERS; i++) *slots[i] = Py_NewRef(got[i + 1]);
    self->last_time = LLONG_MIN, self->last_index = -1;
    self->fault_open = 0, self->fault_last = LLONG_MIN;
    return 0;
}

/* The k-th smallest (k from 1) of a list of ints, for each k of `ranks`: what
   checker.stats's nearest-rank percentiles take from a sorted copy, without sorting millions
   of latencies. Quickselect with a pseudo-random pivot, so that no history of latencies can
   make it quadratic. Irregular for an item that is no int64 (the caller sorts instead). */
static PyObject *
kth_smallest(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *values, *ranks;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &values, &PyTuple_Type, &ranks))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    long long *a = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *a);
    if (a == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++)
        if (!int64_of(PyList_GET_ITEM(values, i), &a[i])) {
            PyMem_Free(a);
            return irregular(i);
        }
    PyObject *found = PyTuple_New(PyTuple_GET_SIZE(ranks));
    unsigned long long seed = 0x9E3779B97F4A7C15ull;
    for (Py_ssize_t r = 0; found != NULL && r < PyTuple_GET_SIZE(ranks); r++) {
        Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(ranks, r)) - 1;
        if (k < 0 || k >= n) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "rank out of range");
            Py_CLEAR(found);
            break;
        }
        Py_ssize_t lo = 0, hi = n - 1;
        while (lo < hi) { /* a[k] ends up where a sorted copy has it */
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            long long pivot = a[lo + (Py_ssize_t)(seed % (unsigned long long)(hi - lo + 1))];
            Py_ssize_t i = lo, j = hi;
            while (i <= j) {
                while (a[i] < pivot) i++;
                while (a[j] > pivot) j--;
                if (i <= j) {
                    long long swap = a[i];
                    a[i++] = a[j], a[j--] = swap;
                }
            }
            if (k <= j) hi = j;
            else if (k >= i) lo = i;
            else break;
        }
        PyTuple_SET_ITEM(found, r, PyLong_FromLongLong(a[k]));
    }
    PyMem_Free(a);
    return found;
}

static PyMethodDef Scanner_methods[] = {
    {"feed", (PyCFunction)Scanner_feed, METH_O, "Digest one batch (a list of events)."},
    {"totals", (PyCFunction)Scanner_totals, METH_NOARGS, "The counts kept in C."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "digest.py's event loop over batches of events, into the caller's containers.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_traverse = (traverseproc)Scanner_traverse,
    .tp_clear = (inquiry)Scanner_clear,
    .tp_methods = Scanner_methods,
};

/* ---- the sweeps over one key's sections (checker.mutex, checker.fencing, checker.liveness)
   Each follows its Python function, which stays the definition; they read a section's int
   fields into arrays and sort them with the list position as the last key, which is what
   Python's stable sort gives. A field that is no int64 (sections made by hand) raises
   Irregular, and the Python function runs instead. */

enum { S_START, S_END, S_FENCING, S_INDEX, S_INVOKED, S_PROCESS, N_SECTION_FIELDS };
static const char *const SECTION_FIELDS[N_SECTION_FIELDS] = {
    "start", "end", "fencing", "acquire_index", "invoked", "process",
};

typedef struct {
    long long a, b, c;
    Py_ssize_t pos;
} SortKey;

static int
by_key(const void *x, const void *y)
{
    const SortKey *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    if (p->c != q->c) return p->c < q->c ? -1 : 1;
    return p->pos < q->pos ? -1 : p->pos > q->pos;
}

/* The columns of `sections`: col[field][i]; fencing None reads as 0 (the sweep's `or 0`). */
static long long *
columns(PyObject *section_type, PyObject *sections, Py_ssize_t *n)
{
    Py_ssize_t offsets[N_SECTION_FIELDS];
    PyObject *dict = ((PyTypeObject *)section_type)->tp_dict;
    for (int k = 0; k < N_SECTION_FIELDS; k++) {
        PyObject *descr = PyDict_GetItemString(dict, SECTION_FIELDS[k]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "section type has no slot %s", SECTION_FIELDS[k]);
            return NULL;
        }
        offsets[k] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    *n = PyList_GET_SIZE(sections);
    long long *col = PyMem_Malloc(sizeof *col * N_SECTION_FIELDS * (size_t)(*n ? *n : 1));
    if (col == NULL) return (long long *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *section = PyList_GET_ITEM(sections, i);
        if (!Py_IS_TYPE(section, (PyTypeObject *)section_type)) goto irregular;
        for (int k = 0; k < N_SECTION_FIELDS; k++) {
            PyObject *v = *(PyObject **)((char *)section + offsets[k]);
            long long *cell = &col[k * *n + i];
            if (v == NULL) goto irregular;
            if (k == S_FENCING && v == Py_None) *cell = 0;
            else if (!int64_of(v, cell)) goto irregular;
        }
        /* held_until's start + 1 and the sweeps' sums stay inside int64 */
        if (col[S_START * *n + i] == LLONG_MAX) goto irregular;
    }
    return col;
irregular:
    PyMem_Free(col);
    PyErr_SetString(Irregular, "a section of another shape");
    return NULL;
}

static SortKey *
sorted_by(long long *col, Py_ssize_t n, int a, int b, int c)
{
    SortKey *keys = PyMem_Malloc(sizeof *keys * (size_t)(n ? n : 1));
    if (keys == NULL) return (SortKey *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        keys[i].a = col[a * n + i];
        keys[i].b = b < 0 ? 0 : col[b * n + i];
        keys[i].c = c < 0 ? 0 : col[c * n + i];
        keys[i].pos = i;
    }
    /* Sections come by acquire index, which is time order: most sorts find them sorted. */
    Py_ssize_t i = 1;
    while (i < n && by_key(&keys[i - 1], &keys[i]) < 0) i++;
    if (i < n) qsort(keys, (size_t)n, sizeof *keys, by_key);
    return keys;
}

static int
add_pair(PyObject *pairs, Py_ssize_t first, Py_ssize_t second)
{
    PyObject *pair = Py_BuildValue("(nn)", first, second);
    int r = pair == NULL ? -1 : PyList_Append(pairs, pair);
    Py_XDECREF(pair);
    return r;
}

#define COL(f, i) col[(f) * n + (i)]

/* checker.mutex._check_key: (other, section) positions of each witness, in sweep order. */
static PyObject *
overlaps(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *section_type, *sections;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &section_type, &PyList_Type, &sections))
        return NULL;
    long long *col = columns(section_type, sections, &n);
    if (col == NULL) return NULL;
    SortKey *order = sorted_by(col, n, S_START, S_END, S_INDEX);
    PyObject *pairs = order == NULL ? NULL : PyList_New(0);
    Py_ssize_t best = -1, rival = -1;
    long long best_until = 0, rival_until = 0;
    for (Py_ssize_t o = 0; pairs != NULL && o < n; o++) {
        Py_ssize_t s = order[o].pos, other;
        long long start = COL(S_START, s), end = COL(S_END, s);
        long long until = end > start ? end : start + 1, other_until;
        if (best >= 0 && COL(S_PROCESS, best) != COL(S_PROCESS, s))
            other = best, other_until = best_until;
        else
            other = rival, other_until = rival_until;
        if (other >= 0 && start < other_until && add_pair(pairs, other, s) < 0) Py_CLEAR(pairs);
        if (best < 0 || COL(S_PROCESS, s) == COL(S_PROCESS, best)) {
            if (best < 0 || until > best_until) best = s, best_until = until;
        } else if (until > best_until) {
            rival = best, rival_until = best_until, best = s, best_until = until;
        } else if (rival < 0 || until > rival_until) {
            rival = s, rival_until = until;
        }
    }
    PyMem_Free(order);
    PyMem_Free(col);
    return pairs;
}

/* checker.fencing._out_of_order: (earlier, later) positions of each grant out of order. */
static PyObject *
out_of_order(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *section_type, *granted;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &section_type, &PyList_Type, &granted))
        return NULL;
    long long *col = columns(section_type, granted, &n);
    if (col == NULL) return NULL;
    SortKey *begun = sorted_by(col, n, S_INVOKED, S_INDEX, -1);
    SortKey *done = begun == NULL ? NULL : sorted_by(col, n, S_START, S_INDEX, -1);
    PyObject *pairs = done == NULL ? NULL : PyList_New(0);
    Py_ssize_t top = -1, finished = 0;
    long long highest = 0;
    for (Py_ssize_t b = 0; pairs != NULL && b < n; b++) {
        Py_ssize_t s = begun[b].pos;
        long long began = COL(S_INVOKED, s);
        for (; finished < n && COL(S_START, done[finished].pos) < began; finished++) {
            Py_ssize_t d = done[finished].pos;
            if (top < 0 || COL(S_FENCING, d) > highest) top = d, highest = COL(S_FENCING, d);
        }
        if (top >= 0 && COL(S_FENCING, s) <= highest && add_pair(pairs, top, s) < 0)
            Py_CLEAR(pairs);
    }
    PyMem_Free(begun);
    PyMem_Free(done);
    PyMem_Free(col);
    return pairs;
}

/* checker.liveness._free, keeping only the periods longer than `bound` (what _stuck looks
   at): (from, to, open), from -inf for the period before the first section. */
static PyObject *
long_free_periods(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *section_type, *sections, *end_object, *bound_object;
    long long bound, end;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!O!OO", &PyType_Type, &section_type, &PyList_Type, &sections,
                          &end_object, &bound_object))
        return NULL;
    if (!int64_of(end_object, &end) || !int64_of(bound_object, &bound)) return irregular(-1);
    long long *col = columns(section_type, sections, &n);
    if (col == NULL) return NULL;
    SortKey *order = sorted_by(col, n, S_START, -1, -1);
    PyObject *periods = order == NULL ? NULL : PyList_New(0);
    int from_start = 1; /* free_from is -inf */
    long long free_from = 0;
    for (Py_ssize_t o = 0; periods != NULL && o <= n; o++) {
        int last = o == n;
        long long to = last ? end : COL(S_START, order[o].pos);
        /* from - inf, every period is long; else compare without overflowing */
        if (from_start || to > free_from) {
            int long_one = from_start || (free_from < 0 && to > LLONG_MAX + free_from) ||
                           to - free_from > bound;
            if (long_one) {
                PyObject *from = from_start ? PyFloat_FromDouble(-Py_HUGE_VAL)
                                            : PyLong_FromLongLong(free_from);
                PyObject *period =
                    from == NULL ? NULL : Py_BuildValue("(NLO)", from, to, last ? Py_True : Py_False);
                if (period == NULL || PyList_Append(periods, period) < 0) Py_CLEAR(periods);
                Py_XDECREF(period);
            }
        }
        if (!last) {
            long long until = COL(S_END, order[o].pos);
            if (from_start || until > free_from) free_from = until;
            from_start = 0;
        }
    }
    PyMem_Free(order);
    PyMem_Free(col);
    return periods;
}

/* ---- the value fields, from core.op_values ----------------------------------------------- */

static void
forget_fields(void)
{
    for (int f = 0; f < F_OTHER; f++)
        for (int t = 0; t < 4; t++) {
            Shape *shape = &shapes[f][t];
            for (Py_ssize_t i = 0; i < shape->n; i++) Py_DECREF(shape->checks[i].name);
            PyMem_Free(shape->checks);
            shape->n = 0, shape->checks = NULL;
        }
    for (int i = 0; i < N_READS; i++) Py_CLEAR(reads[i]);
    fields_given = 0;
}

static int
kind_code(PyObject *s)
{
    if (is(s, "int", 3)) return K_INT;
    if (is(s, "strs", 4)) return K_STRS;
    if (is(s, "bool", 4)) return K_BOOL;
    if (is(s, "str", 3)) return K_STR;
    return -1;
}

/* `name` interned, a new reference; NULL for a name that is no str */
static PyObject *
interned_name(PyObject *name)
{
    if (!PyUnicode_CheckExact(name)) {
        PyErr_Format(PyExc_TypeError, "a value field's name is a str, not %R", name);
        return NULL;
    }
    Py_INCREF(name);
    PyUnicode_InternInPlace(&name);
    return name;
}

/* One operation's value: (f, type, ((name, kind, least), ...)). */
static int
take_shape(PyObject *entry)
{
    PyObject *f_name, *type_name, *fields;
    if (!PyTuple_Check(entry) ||
        !PyArg_ParseTuple(entry, "UUO!", &f_name, &type_name, &PyTuple_Type, &fields)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a shape is (f, type, fields)");
        return -1;
    }
    int f = f_code(f_name), type = type_code(type_name);
    if (f == F_OTHER || type < 0 || shapes[f][type].checks != NULL) {
        PyErr_Format(PyExc_ValueError, "%R %R: no operation and type of this loop's, or twice",
                     f_name, type_name);
        return -1;
    }
    Shape *shape = &shapes[f][type];
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    if ((shape->checks = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Check))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(fields, i), *name, *kind, *least;
        Check *check = &shape->checks[i];
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "UUO", &name, &kind, &least)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a field is (name, kind, least)");
            return -1;
        }
        if ((check->kind = kind_code(kind)) < 0 || (least != Py_None && check->kind != K_INT)) {
            PyErr_Format(PyExc_ValueError, "%R: a kind this loop does not check (%R, least %R)",
                         name, kind, least);
            return -1;
        }
        if ((check->bounded = least != Py_None)) {
            check->least = PyLong_AsLongLong(least);
            if (check->least == -1 && PyErr_Occurred()) return -1;
        }
        if ((check->name = interned_name(name)) == NULL) return -1;
        shape->n = i + 1;
    }
    return 0;
}

/* use_fields(names, shapes): core.op_values's scanned_names() (the fields this loop reads,
   in the order of R_*) and scanned_shapes() (each operation's value: its fields and their
   kinds). checker/native.py calls it at import; a Scanner refuses to run before. */
static PyObject *
use_fields(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *names, *given;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &names, &PyTuple_Type, &given))
        return NULL;
    if (PyTuple_GET_SIZE(names) != N_READS)
        return PyErr_Format(PyExc_ValueError, "%d value field names, not %zd (R_* in _scan.c)",
                            N_READS, PyTuple_GET_SIZE(names));
    forget_fields();
    for (int i = 0; i < N_READS; i++)
        if ((reads[i] = interned_name(PyTuple_GET_ITEM(names, i))) == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(given); i++)
        if (take_shape(PyTuple_GET_ITEM(given, i)) < 0) goto fail;
    fields_given = 1;
    Py_RETURN_NONE;
fail:
    forget_fields();
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"use_fields", use_fields, METH_VARARGS,
     "use_fields(names, shapes): the value fields, from core.op_values"},
    {"kth_smallest", kth_smallest, METH_VARARGS,
     "kth_smallest(values: list[int], ranks: tuple[int, ...]) -> tuple[int, ...]"},
    {"overlaps", overlaps, METH_VARARGS, "checker.mutex._check_key's witness pairs"},
    {"out_of_order", out_of_order, METH_VARARGS, "checker.fencing._out_of_order's pairs"},
    {"long_free_periods", long_free_periods, METH_VARARGS,
     "checker.liveness._free's periods longer than a bound"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "checker._scan",
    "The digest's event loop in C (see checker/digest.py).", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    PyObject **interned[] = {&s_nemesis, &s_invokes, &s_dones, &s_most_ttl};
    const char *texts[] = {"nemesis", "invokes", "dones", "ttl_ms"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if ((*interned[i] = PyUnicode_InternFromString(texts[i])) == NULL) return NULL;
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Irregular = PyErr_NewExceptionWithDoc(
        "checker._scan.Irregular", "An event this loop does not take: digest it in Python.",
        NULL, NULL);
    OutOfOrder = PyErr_NewExceptionWithDoc(
        "checker._scan.OutOfOrder", "A file's batch out of order: read it checked for the line.",
        NULL, NULL);
    if (Irregular == NULL || OutOfOrder == NULL ||
        PyModule_AddObjectRef(m, "Irregular", Irregular) < 0 ||
        PyModule_AddObjectRef(m, "OutOfOrder", OutOfOrder) < 0 ||
        PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
