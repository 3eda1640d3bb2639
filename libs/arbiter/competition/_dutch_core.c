/*
 * The compiled core of the FIDE Dutch system (C.04.3, 2025 edition): the bracket procedure
 * of Articles 2-4 as a sequence of maximum-weight matchings.
 *
 * Every criterion of Article 2 becomes a bit field of an edge weight, the most important
 * criterion in the highest field, so that one maximum-weight matching optimises them in
 * their order of priority ([C1]-[C3] decide whether an edge exists at all; [C4], [C2] and
 * [C5] weigh every edge of the whole field, so that what a bracket does always leaves the
 * rest pairable and the bye for the lowest score possible). Article 4's order of generation
 * ("the first candidate that is best wins") is reproduced by fixing the decisions one at a
 * time, in the order the article makes them (which moved-down players are paired, their
 * opponents, the exchanges between S1 and S2, then each S1 player's opponent), each time
 * giving the preferred choice a bonus in the lowest bits and solving again. The edition lets
 * a program use any method that gives the pairing its procedure describes.
 *
 * Where the text leaves room (how [C8] looks into the next bracket, when [C9] applies, the
 * weights of the scores in [C7] and [C18]-[C21]), the interpretation is the reference
 * engine's, bbpPairings 6.0.0, so that the pairings are the same: tests/data/swiss-corpus.
 *
 * Weights are unsigned integers of L 64-bit limbs (L fixed per round): the fields of a
 * 200-player round need several hundred bits.
 *
 * The matching is the primal-dual blossom algorithm (Edmonds; Galil 1986) made incremental:
 * a stage grows one alternating tree, from one exposed vertex whose dual variable is not
 * zero. When the weights of a vertex's edges change, the vertex gets the least dual its edges
 * allow (cut out of its blossoms first when it is in one) and loses its match if that edge is
 * no longer tight; the next solve only re-grows trees from the vertices left exposed. One tree
 * at a time keeps every dual an integer: all vertices of a tree share the parity of its root.
 *
 * Python calls `pair(...)` (see the docstring of the module function) with the present
 * players in pairing order (Article 1.2: score, then pairing number) and their derived data
 * (colour preferences, floats, bye eligibility); it returns each player's opponent.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t limb_t;

/* ------------------------------------------------------------------------------------------
 * Unsigned integers of L limbs, least significant limb first.
 * ---------------------------------------------------------------------------------------- */

static inline void big_zero(limb_t *a, int L) { memset(a, 0, (size_t)L * sizeof(limb_t)); }

static inline void big_copy(limb_t *d, const limb_t *a, int L) { memcpy(d, a, (size_t)L * sizeof(limb_t)); }

/* From the top limb down: the weights' and slacks' highest fields are the ones most often set. */
static inline int big_is_zero(const limb_t *a, int L)
{
    for (int i = L - 1; i >= 0; i--)
        if (a[i]) return 0;
    return 1;
}

static inline int big_cmp(const limb_t *a, const limb_t *b, int L)
{
    for (int i = L - 1; i >= 0; i--)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* d = a + b */
static inline void big_add(limb_t *d, const limb_t *a, const limb_t *b, int L)
{
    limb_t carry = 0;
    for (int i = 0; i < L; i++) {
        limb_t s = a[i] + carry;
        limb_t c1 = s < carry;
        limb_t r = s + b[i];
        carry = c1 | (r < s);
        d[i] = r;
    }
}

/* d = a - b (a >= b) */
static inline void big_sub(limb_t *d, const limb_t *a, const limb_t *b, int L)
{
    limb_t borrow = 0;
    for (int i = 0; i < L; i++) {
        limb_t ai = a[i], bi = b[i];
        limb_t r = ai - bi - borrow;
        borrow = (ai < bi) | ((ai == bi) & borrow);
        d[i] = r;
    }
}

/* d = a + b - c, the slack of an edge (a, b duals, c twice its weight); returns 0 when negative */
static inline int big_add_sub(limb_t *d, const limb_t *a, const limb_t *b, const limb_t *c, int L)
{
    big_add(d, a, b, L);
    if (big_cmp(d, c, L) < 0) return 0;
    big_sub(d, d, c, L);
    return 1;
}

/* a += x << bit, for x < 2^63 */
static inline void big_add_at(limb_t *a, uint64_t x, int bit, int L)
{
    if (!x) return;
    int limb = bit >> 6, off = bit & 63;
    limb_t lo = off ? x << off : x;
    limb_t hi = off ? x >> (64 - off) : 0;
    limb_t carry = 0;
    for (int i = limb; i < L; i++) {
        limb_t add = i == limb ? lo : (i == limb + 1 ? hi : 0);
        limb_t s = a[i] + add;
        limb_t c1 = s < add;
        limb_t r = s + carry;
        c1 |= r < s;
        a[i] = r;
        carry = c1;
        if (!carry && i > limb) break;
    }
}

/* a -= x (a >= x) */
static inline void big_sub_small(limb_t *a, uint64_t x, int L)
{
    limb_t borrow = x;
    for (int i = 0; i < L && borrow; i++) {
        limb_t ai = a[i];
        a[i] = ai - borrow;
        borrow = ai < borrow;
    }
}

/* a >>= 1 */
static inline void big_half(limb_t *a, int L)
{
    for (int i = 0; i < L; i++) a[i] = (a[i] >> 1) | (i + 1 < L ? a[i + 1] << 63 : 0);
}

/* a <<= k */
static inline void big_shl(limb_t *a, int k, int L)
{
    int limbs = k >> 6, bits = k & 63;
    for (int i = L - 1; i >= 0; i--) {
        limb_t lo = i - limbs >= 0 ? a[i - limbs] : 0;
        limb_t lo2 = i - limbs - 1 >= 0 ? a[i - limbs - 1] : 0;
        a[i] = bits ? (lo << bits) | (lo2 >> (64 - bits)) : lo;
    }
}

/* a <<= 1 */
static inline void big_double(limb_t *a, int L)
{
    for (int i = L - 1; i >= 0; i--) a[i] = (a[i] << 1) | (i ? a[i - 1] >> 63 : 0);
}

static int bits_for(long x);

/* ------------------------------------------------------------------------------------------
 * Maximum-weight matching on a dense graph, incremental by vertex.
 * ---------------------------------------------------------------------------------------- */

enum { FREE = 0, S_LABEL = 1, T_LABEL = 2 };

typedef struct {
    int n, L;
    limb_t *w2;       /* n*n*L: twice each edge weight; zero means no edge */
    limb_t *dual;     /* 2n*L: vertex duals, then blossom duals */
    int *mate;        /* matched vertex, or -1 */
    char *active;     /* still in the graph (finalised pairs leave it) */
    int *top;         /* top-level blossom of each vertex */
    int *parent;      /* 2n: enclosing blossom, or -1 */
    int *base;        /* 2n: base vertex; -1 for an unused blossom slot */
    int *nchild;      /* 2n */
    int **child;      /* 2n: children around the odd cycle, the base's child first */
    int **ex, **ey;   /* 2n: edge i joins ex[i] (in child i) to ey[i] (in child i+1) */
    int *free_slot;
    int nfree;
    /* state of one stage */
    char *label;      /* 2n: label of a top-level blossom */
    int *lfrom, *lto; /* 2n: the edge that labelled it (from outside, to inside); -1 for a root */
    char *reached;    /* n: a vertex inside a T-blossom reached by a tight edge */
    char *mark;       /* n: scratch marks outside the stages */
    int *reach_from;
    int *best_s;      /* n: for a vertex outside the S-blossoms, its least-slack S neighbour */
    int *sb;          /* n: for an S vertex, its least-slack S neighbour in another blossom when last scanned */
    /* the slacks of the edges (v, best_s[v]) and (v, sb[v]), kept up to date as the duals move:
       the scans compare with them instead of computing them again */
    limb_t *best_slack, *sb_slack;
    int *queue;
    int qhead, qtail;
    int *dirty;       /* vertices that may be exposed with a positive dual */
    char *in_dirty;
    int ndirty;
    int *leaves;      /* scratch */
    int *path_b;      /* scratch for blossom creation */
    int *path_x, *path_y;
    limb_t *t1, *t2, *delta, *reset_dual;
    int broken;       /* an impossible state was met: the answer cannot be trusted */
} Matcher;

#define W2(M, u, v) ((M)->w2 + ((size_t)(u) * (M)->n + (v)) * (M)->L)
#define DUAL(M, x) ((M)->dual + (size_t)(x) * (M)->L)
#define BEST_SLACK(M, v) ((M)->best_slack + (size_t)(v) * (M)->L)
#define SB_SLACK(M, v) ((M)->sb_slack + (size_t)(v) * (M)->L)

static void matcher_free(Matcher *M)
{
    if (!M) return;
    if (M->child)
        for (int b = 0; b < 2 * M->n; b++) {
            free(M->child[b]);
            free(M->ex[b]);
            free(M->ey[b]);
        }
    free(M->child); free(M->ex); free(M->ey);
    free(M->w2); free(M->dual); free(M->mate); free(M->active); free(M->top); free(M->parent);
    free(M->base); free(M->nchild); free(M->free_slot); free(M->label); free(M->lfrom); free(M->lto);
    free(M->reached); free(M->mark); free(M->reach_from); free(M->best_s); free(M->sb); free(M->best_slack); free(M->sb_slack); free(M->queue);
    free(M->dirty); free(M->in_dirty); free(M->leaves); free(M->path_b); free(M->path_x); free(M->path_y);
    free(M->t1); free(M->t2); free(M->delta); free(M->reset_dual);
    free(M);
}

static Matcher *matcher_new(int n, int L)
{
    Matcher *M = calloc(1, sizeof(Matcher));
    if (!M) return NULL;
    M->n = n;
    M->L = L;
    int n2 = 2 * n > 0 ? 2 * n : 1;
    M->w2 = calloc((size_t)n * n * L + 1, sizeof(limb_t));
    M->dual = calloc((size_t)n2 * L, sizeof(limb_t));
    M->mate = malloc(sizeof(int) * n2);
    M->active = calloc(n2, 1);
    M->top = malloc(sizeof(int) * n2);
    M->parent = malloc(sizeof(int) * n2);
    M->base = malloc(sizeof(int) * n2);
    M->nchild = calloc(n2, sizeof(int));
    M->child = calloc(n2, sizeof(int *));
    M->ex = calloc(n2, sizeof(int *));
    M->ey = calloc(n2, sizeof(int *));
    M->free_slot = malloc(sizeof(int) * n2);
    M->label = calloc(n2, 1);
    M->lfrom = malloc(sizeof(int) * n2);
    M->lto = malloc(sizeof(int) * n2);
    M->reached = calloc(n2, 1);
    M->mark = calloc(n2, 1);
    M->reach_from = malloc(sizeof(int) * n2);
    M->best_s = malloc(sizeof(int) * n2);
    M->sb = malloc(sizeof(int) * n2);
    M->best_slack = calloc((size_t)n2 * L, sizeof(limb_t));
    M->sb_slack = calloc((size_t)n2 * L, sizeof(limb_t));
    M->queue = malloc(sizeof(int) * (n2 + 1));
    M->dirty = malloc(sizeof(int) * n2);
    M->in_dirty = calloc(n2, 1);
    M->leaves = malloc(sizeof(int) * n2);
    M->path_b = malloc(sizeof(int) * (n2 + 1));
    M->path_x = malloc(sizeof(int) * (n2 + 1));
    M->path_y = malloc(sizeof(int) * (n2 + 1));
    M->t1 = calloc(L, sizeof(limb_t));
    M->t2 = calloc(L, sizeof(limb_t));
    M->delta = calloc(L, sizeof(limb_t));
    M->reset_dual = calloc(L, sizeof(limb_t));
    if (!M->w2 || !M->dual || !M->mate || !M->active || !M->top || !M->parent || !M->base || !M->nchild
        || !M->child || !M->ex || !M->ey || !M->free_slot || !M->label || !M->lfrom || !M->lto
        || !M->reached || !M->mark || !M->reach_from || !M->best_s || !M->sb || !M->best_slack || !M->sb_slack || !M->queue || !M->dirty
        || !M->in_dirty || !M->leaves || !M->path_b || !M->path_x || !M->path_y || !M->t1 || !M->t2
        || !M->delta || !M->reset_dual) {
        matcher_free(M);
        return NULL;
    }
    for (int b = n; b < 2 * n; b++) {
        M->child[b] = malloc(sizeof(int) * n);
        M->ex[b] = malloc(sizeof(int) * n);
        M->ey[b] = malloc(sizeof(int) * n);
        if (!M->child[b] || !M->ex[b] || !M->ey[b]) {
            matcher_free(M);
            return NULL;
        }
    }
    for (int x = 0; x < 2 * n; x++) {
        M->parent[x] = -1;
        M->base[x] = x < n ? x : -1;
        M->lfrom[x] = M->lto[x] = -1;
        M->sb[x] = -1;
    }
    M->nfree = 0;
    for (int b = 2 * n - 1; b >= n; b--) M->free_slot[M->nfree++] = b;
    for (int v = 0; v < n; v++) {
        M->mate[v] = -1;
        M->top[v] = v;
        M->best_s[v] = -1;
    }
    return M;
}

static inline void edge_slack(Matcher *M, int u, int v, limb_t *out);

static void mark_dirty(Matcher *M, int v)
{
    if (!M->in_dirty[v]) {
        M->in_dirty[v] = 1;
        M->dirty[M->ndirty++] = v;
    }
}

/*
 * Start from scratch: no blossom, every vertex's dual the largest weight at it, and every edge
 * that is then tight between two exposed vertices matched, in vertex order. The stages only have
 * the exposed vertices with a positive dual left to do, few where many weights are equal.
 */
static void matcher_start(Matcher *M)
{
    int n = M->n, L = M->L;
    M->nfree = 0;
    for (int b = 2 * n - 1; b >= n; b--) {
        M->base[b] = -1;
        M->parent[b] = -1;
        M->nchild[b] = 0;
        big_zero(DUAL(M, b), L);
        M->free_slot[M->nfree++] = b;
    }
    for (int v = 0; v < n; v++) {
        M->mate[v] = -1;
        M->top[v] = v;
        M->parent[v] = -1;
        limb_t *d = DUAL(M, v);
        big_zero(d, L);
        if (!M->active[v]) continue;
        for (int u = 0; u < n; u++)
            if (u != v && M->active[u] && big_cmp(W2(M, v, u), d, L) > 0) big_copy(d, W2(M, v, u), L);
        big_half(d, L);
    }
    for (int v = 0; v < n; v++) {
        if (!M->active[v] || M->mate[v] >= 0 || big_is_zero(DUAL(M, v), L)) continue;
        for (int u = v + 1; u < n; u++) {
            if (!M->active[u] || M->mate[u] >= 0 || big_is_zero(W2(M, v, u), L)) continue;
            edge_slack(M, v, u, M->t1);
            if (big_is_zero(M->t1, L)) {
                M->mate[v] = u;
                M->mate[u] = v;
                break;
            }
        }
        if (M->mate[v] < 0) mark_dirty(M, v);
    }
}

/* The leaves (vertices) of blossom b, appended to out[*count]. */
static void collect_leaves(const Matcher *M, int b, int *out, int *count)
{
    if (b < M->n) {
        out[(*count)++] = b;
        return;
    }
    for (int i = 0; i < M->nchild[b]; i++) collect_leaves(M, M->child[b][i], out, count);
}

static void set_top(Matcher *M, int b, int t)
{
    if (b < M->n) {
        M->top[b] = t;
        return;
    }
    for (int i = 0; i < M->nchild[b]; i++) set_top(M, M->child[b][i], t);
}

/* slack of edge (u, v) between different top-level blossoms into out; the edge must exist */
static inline void edge_slack(Matcher *M, int u, int v, limb_t *out)
{
#ifdef __SIZEOF_INT128__
    /* dual(u) + dual(v) - w2(u, v) in one pass: the scans of a stage spend most of their time here */
    const limb_t *a = DUAL(M, u), *b = DUAL(M, v), *c = W2(M, u, v);
    __int128 carry = 0;
    for (int i = 0; i < M->L; i++) {
        __int128 r = (__int128)a[i] + b[i] - c[i] + carry;
        out[i] = (limb_t)r;
        carry = r >> 64;
    }
#else
    big_add(out, DUAL(M, u), DUAL(M, v), M->L);
    big_sub(out, out, W2(M, u, v), M->L);
#endif
}

/* The child of b that contains vertex v. */
static int child_containing(const Matcher *M, int b, int v)
{
    int t = v;
    while (M->parent[t] != b) t = M->parent[t];
    return t;
}

static int child_index(const Matcher *M, int b, int c)
{
    for (int i = 0; i < M->nchild[b]; i++)
        if (M->child[b][i] == c) return i;
    return -1;
}

static void rotate_blossom(Matcher *M, int b, int v);

/* Match x and y, each made the base of its blossom below b first. */
static void match_inside(Matcher *M, int b, int x, int y)
{
    int cx = child_containing(M, b, x), cy = child_containing(M, b, y);
    if (cx >= M->n) rotate_blossom(M, cx, x);
    if (cy >= M->n) rotate_blossom(M, cy, y);
    M->mate[x] = y;
    M->mate[y] = x;
}

/* Re-match blossom b inside so that vertex v becomes its base (v is left for an outside match). */
static void rotate_blossom(Matcher *M, int b, int v)
{
    int c = child_containing(M, b, v);
    if (c >= M->n) rotate_blossom(M, c, v);
    int k = M->nchild[b];
    int i = child_index(M, b, c);
    if (i == 0) {
        M->base[b] = v;
        return;
    }
    if (i % 2 == 0) {
        /* walk back to child 0: edges i-2, i-4, ..., 0 become matched */
        for (int j = i - 2; j >= 0; j -= 2) match_inside(M, b, M->ex[b][j], M->ey[b][j]);
    } else {
        /* walk forward round the cycle: edges i+1, i+3, ..., k-1 become matched */
        for (int j = i + 1; j <= k - 1; j += 2) match_inside(M, b, M->ex[b][j], M->ey[b][j]);
    }
    /* child i becomes child 0 */
    int *scratch = M->path_b;
    for (int j = 0; j < k; j++) scratch[j] = M->child[b][(i + j) % k];
    memcpy(M->child[b], scratch, sizeof(int) * k);
    for (int j = 0; j < k; j++) scratch[j] = M->ex[b][(i + j) % k];
    memcpy(M->ex[b], scratch, sizeof(int) * k);
    for (int j = 0; j < k; j++) scratch[j] = M->ey[b][(i + j) % k];
    memcpy(M->ey[b], scratch, sizeof(int) * k);
    M->base[b] = v;
}

static void release_slot(Matcher *M, int b)
{
    M->base[b] = -1;
    M->parent[b] = -1;
    M->nchild[b] = 0;
    M->label[b] = FREE;
    M->lfrom[b] = M->lto[b] = -1;
    big_zero(DUAL(M, b), M->L);
    M->free_slot[M->nfree++] = b;
}

/*
 * Cut vertex v out of its blossoms and its match before the weights of its edges change:
 * its top-level blossom loses its outside match (that mate becomes exposed), v becomes the
 * base, and each blossom around v is dissolved, its dual added to the duals of its vertices
 * so that every edge inside keeps its slack. v ends exposed with a dual above any slack need.
 */
static void matcher_isolate(Matcher *M, int v)
{
    int b = M->top[v];
    int bb = M->base[b];
    if (M->mate[bb] >= 0) {
        int m = M->mate[bb];
        M->mate[bb] = -1;
        M->mate[m] = -1;
        mark_dirty(M, m);
    }
    if (b >= M->n) {
        rotate_blossom(M, b, v);
        M->mate[v] = -1;
        while (M->top[v] != v) {
            int B = M->top[v];
            int count = 0;
            collect_leaves(M, B, M->leaves, &count);
            for (int i = 0; i < count; i++) big_add(DUAL(M, M->leaves[i]), DUAL(M, M->leaves[i]), DUAL(M, B), M->L);
            for (int i = 0; i < M->nchild[B]; i++) {
                int c = M->child[B][i];
                M->parent[c] = -1;
                set_top(M, c, c);
            }
            release_slot(M, B);
        }
    }
    big_copy(DUAL(M, v), M->reset_dual, M->L);
    mark_dirty(M, v);
}

/*
 * Set the weights of edges (v, u) for the listed u (weights twice over, L limbs each). Cheap
 * when v stands alone: its dual becomes the least that all its edges allow, and it loses its
 * match only if that edge is then not tight. Inside a blossom it is isolated first. A change
 * made from the endpoint the change belongs to (the higher player, for the bonuses of the
 * bracket procedure) leaves the matched edges tight.
 */
static void matcher_set_edges(Matcher *M, int v, const int *us, const limb_t *w2s, int count)
{
    int L = M->L;
    for (int i = 0; i < count; i++) {
        big_copy(W2(M, v, us[i]), w2s + (size_t)i * L, L);
        big_copy(W2(M, us[i], v), w2s + (size_t)i * L, L);
    }
    if (M->top[v] != v) {
        matcher_isolate(M, v);
        return;
    }
    limb_t *need = M->t1, *x = M->t2;
    big_zero(need, L);
    for (int u = 0; u < M->n; u++) {
        if (u == v || !M->active[u]) continue;
        const limb_t *w = W2(M, v, u);
        if (big_is_zero(w, L) || big_cmp(w, DUAL(M, u), L) <= 0) continue;
        big_sub(x, w, DUAL(M, u), L);
        if (big_cmp(x, need, L) > 0) big_copy(need, x, L);
    }
    big_copy(DUAL(M, v), need, L);
    int m = M->mate[v];
    if (m >= 0) {
        int tight = !big_is_zero(W2(M, v, m), L);
        if (tight) {
            edge_slack(M, v, m, x);
            tight = big_is_zero(x, L);
        }
        if (!tight) {
            M->mate[v] = -1;
            M->mate[m] = -1;
            mark_dirty(M, m);
            if (!big_is_zero(need, L)) mark_dirty(M, v);
        }
    } else if (!big_is_zero(need, L)) {
        mark_dirty(M, v);
    }
}

/*
 * After the weights of many edges changed, each with an endpoint in `verts`: give those vertices
 * new duals that fit the new weights (at least half of each edge among them, and what every edge
 * to the others needs), unmatch those whose match is no longer tight, and match again, in vertex
 * order, the tight edges between exposed vertices. A whole bracket of new weights then costs a
 * few stages instead of one large search per vertex.
 */
static void matcher_redual(Matcher *M, const int *verts, int k)
{
    int n = M->n, L = M->L;
    char *mark = M->mark;
    for (int i = 0; i < k; i++)
        if (M->top[verts[i]] != verts[i]) matcher_isolate(M, verts[i]);
    for (int i = 0; i < k; i++) mark[verts[i]] = 1;
    limb_t *need = M->t1, *x = M->t2;
    for (int i = 0; i < k; i++) {
        int v = verts[i];
        big_zero(need, L);
        for (int u = 0; u < n; u++) {
            if (u == v || !M->active[u]) continue;
            const limb_t *w = W2(M, v, u);
            if (big_is_zero(w, L)) continue;
            if (mark[u]) {
                big_copy(x, w, L);
                big_half(x, L);
            } else if (big_cmp(w, DUAL(M, u), L) > 0) {
                big_sub(x, w, DUAL(M, u), L);
            } else {
                continue;
            }
            if (big_cmp(x, need, L) > 0) big_copy(need, x, L);
        }
        big_copy(DUAL(M, v), need, L);
    }
    /* lower each dual to the least its edges allow: the old matched edges mostly become tight again */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < k; i++) {
            int v = verts[i];
            big_zero(need, L);
            for (int u = 0; u < n; u++) {
                if (u == v || !M->active[u]) continue;
                const limb_t *w = W2(M, v, u);
                if (big_is_zero(w, L) || big_cmp(w, DUAL(M, u), L) <= 0) continue;
                big_sub(x, w, DUAL(M, u), L);
                if (big_cmp(x, need, L) > 0) big_copy(need, x, L);
            }
            big_copy(DUAL(M, v), need, L);
        }
    for (int i = 0; i < k; i++) {
        int v = verts[i], m = M->mate[v];
        if (m < 0) continue;
        int tight = !big_is_zero(W2(M, v, m), L);
        if (tight) {
            edge_slack(M, v, m, x);
            tight = big_is_zero(x, L);
        }
        if (!tight) {
            M->mate[v] = M->mate[m] = -1;
            mark_dirty(M, m);
        }
    }
    for (int i = 0; i < k; i++) {
        int v = verts[i];
        mark[v] = 0;
        if (M->mate[v] >= 0 || big_is_zero(DUAL(M, v), L)) continue;
        for (int u = 0; u < n; u++) {
            if (u == v || !M->active[u] || M->top[u] != u || M->mate[u] >= 0 || big_is_zero(W2(M, v, u), L)) continue;
            edge_slack(M, v, u, x);
            if (big_is_zero(x, L)) {
                M->mate[v] = u;
                M->mate[u] = v;
                break;
            }
        }
        if (M->mate[v] < 0) mark_dirty(M, v);
    }
}

/* Take a vertex out of the graph for good (its pair is final). */
static void matcher_remove(Matcher *M, int v)
{
    matcher_isolate(M, v);
    M->active[v] = 0;
    big_zero(DUAL(M, v), M->L);
}

/* ---- one stage: grow an alternating tree from one root ---- */

static void queue_leaves(Matcher *M, int b)
{
    int count = 0;
    collect_leaves(M, b, M->leaves, &count);
    for (int i = 0; i < count; i++) M->queue[M->qtail++] = M->leaves[i];
}

/* Label top-level blossom of w with S (from the edge (from, w), or as root when from < 0). */
static void label_s(Matcher *M, int w, int from)
{
    int b = M->top[w];
    M->label[b] = S_LABEL;
    M->lfrom[b] = from;
    M->lto[b] = from >= 0 ? w : -1;
    queue_leaves(M, b);
}

/* Label the blossom of w with T (reached from S vertex `from`), and its base's mate with S. */
static void label_t(Matcher *M, int w, int from)
{
    int b = M->top[w];
    M->label[b] = T_LABEL;
    M->lfrom[b] = from;
    M->lto[b] = w;
    int bb = M->base[b];
    int m = M->mate[bb];
    label_s(M, m, bb);
}

/* Walk up from S-vertex s to the root, flipping the path; s gets partner p (or is left exposed). */
static void flip_to_root(Matcher *M, int s, int p)
{
    for (;;) {
        int bs = M->top[s];
        if (bs >= M->n) rotate_blossom(M, bs, s);
        M->mate[s] = p;
        if (p >= 0) M->mate[p] = s;
        if (M->lfrom[bs] < 0) break;
        int t = M->lfrom[bs]; /* base of the T-blossom above, matched to bs's old base */
        int bt = M->top[t];
        int s2 = M->lfrom[bt], j = M->lto[bt];
        if (bt >= M->n) rotate_blossom(M, bt, j);
        M->mate[j] = s2;
        s = s2;
        p = j;
    }
}

static void augment(Matcher *M, int v, int w)
{
    int bw = M->top[w];
    if (bw >= M->n) rotate_blossom(M, bw, w);
    flip_to_root(M, v, w);
    M->mate[w] = v;
}

/* Find the base blossom of the cycle closed by the tight edge (v, w) between two S-blossoms. */
static int common_base(Matcher *M, int v, int w)
{
    /* mark the path from v's blossom to the root, then walk w's path to the first mark */
    int b = M->top[v];
    int *marks = M->path_b;
    int nm = 0;
    for (;;) {
        marks[nm++] = b;
        if (M->lfrom[b] < 0) break;
        int t = M->top[M->lfrom[b]];
        b = M->top[M->lfrom[t]];
    }
    b = M->top[w];
    for (;;) {
        for (int i = 0; i < nm; i++)
            if (marks[i] == b) return b;
        if (M->lfrom[b] < 0) return -1;
        int t = M->top[M->lfrom[b]];
        b = M->top[M->lfrom[t]];
    }
}

/* Make a new blossom of the odd cycle base-blossom .. v - w .. base-blossom. */
static void add_blossom(Matcher *M, int bb, int v, int w)
{
    int B = M->free_slot[--M->nfree];
    int *cs = M->child[B], *xs = M->ex[B], *ys = M->ey[B];
    /* v side: from bv up to bb, collected then reversed */
    int nv = 0;
    int b = M->top[v];
    int *pb = M->path_b, *px = M->path_x, *py = M->path_y;
    while (b != bb) {
        pb[nv] = b;
        px[nv] = M->lfrom[b];
        py[nv] = M->lto[b];
        nv++;
        b = M->top[M->lfrom[b]];
    }
    int k = 0;
    cs[k] = bb;
    for (int i = nv - 1; i >= 0; i--) {
        /* edge from child k to child k+1 is the labelling edge of child k+1 */
        xs[k] = px[i];
        ys[k] = py[i];
        k++;
        cs[k] = pb[i];
    }
    xs[k] = v;
    ys[k] = w;
    k++;
    b = M->top[w];
    while (b != bb) {
        cs[k] = b;
        /* edge from this child to the next (its parent in the tree) is its labelling edge reversed */
        xs[k] = M->lto[b];
        ys[k] = M->lfrom[b];
        k++;
        b = M->top[M->lfrom[b]];
    }
    M->nchild[B] = k;
    M->base[B] = M->base[bb];
    M->parent[B] = -1;
    M->label[B] = S_LABEL;
    M->lfrom[B] = M->lfrom[bb];
    M->lto[B] = M->lto[bb];
    big_zero(DUAL(M, B), M->L);
    for (int i = 0; i < k; i++) {
        int c = cs[i];
        M->parent[c] = B;
        if (M->label[c] == T_LABEL) {
            /* T sub-blossoms become S: their vertices are scanned now */
            queue_leaves(M, c);
        }
        M->label[c] = FREE;
    }
    set_top(M, B, B);
}

/* Expand blossom b into its children; at the end of a stage (endstage) zero-dual ones recursively. */
static void expand_blossom(Matcher *M, int b, int endstage)
{
    int k = M->nchild[b];
    for (int i = 0; i < k; i++) {
        int c = M->child[b][i];
        M->parent[c] = -1;
        set_top(M, c, c);
        if (c >= M->n && endstage && big_is_zero(DUAL(M, c), M->L)) expand_blossom(M, c, endstage);
    }
    if (!endstage && M->label[b] == T_LABEL) {
        /* b was reached through (from, to), to inside child e; relabel the even path e .. 0 */
        int from = M->lfrom[b], to = M->lto[b];
        int e = child_index(M, b, M->top[to]);
        int step = (e % 2 == 0) ? -1 : 1;
        int cur = e;
        int pf = from, pt = to;
        for (;;) {
            int c = M->child[b][cur];
            M->label[c] = T_LABEL;
            M->lfrom[c] = pf;
            M->lto[c] = pt;
            if (cur == 0) break;
            /* the matched edge to the next child: its base and the next child's base */
            int nxt = (cur + step + k) % k;
            int mx, my;
            if (step == 1) {
                mx = M->ex[b][cur];
                my = M->ey[b][cur];
            } else {
                mx = M->ey[b][nxt];
                my = M->ex[b][nxt];
            }
            int sc = M->child[b][nxt];
            M->label[sc] = S_LABEL;
            M->lfrom[sc] = mx;
            M->lto[sc] = my;
            queue_leaves(M, sc);
            /* the unmatched edge from that S child to the following T child */
            int nn = (nxt + step + k) % k;
            if (step == 1) {
                pf = M->ex[b][nxt];
                pt = M->ey[b][nxt];
            } else {
                pf = M->ey[b][nn];
                pt = M->ex[b][nn];
            }
            cur = nn;
        }
        /* the other children: free, unless one of their vertices was reached */
        for (int i = 0; i < k; i++) {
            int c = M->child[b][i];
            if (M->label[c] != FREE) continue; /* on the path, or labelled S through a mate */
            int count = 0;
            collect_leaves(M, c, M->leaves, &count);
            int hit = -1;
            for (int j = 0; j < count; j++)
                if (M->reached[M->leaves[j]]) {
                    hit = M->leaves[j];
                    break;
                }
            if (hit >= 0 && M->label[c] == FREE) label_t(M, hit, M->reach_from[hit]);
        }
    }
    release_slot(M, b);
}

/* The least-slack edge from S vertex x to an S vertex in another blossom, or -1. */
static int rescan_best_s(Matcher *M, int x)
{
    int L = M->L, best = -1;
    limb_t *s = M->t1, *b = M->t2;
    for (int y = 0; y < M->n; y++) {
        if (!M->active[y] || M->top[y] == M->top[x] || M->label[M->top[y]] != S_LABEL) continue;
        if (big_is_zero(W2(M, x, y), L)) continue;
        edge_slack(M, x, y, s);
        if (best < 0 || big_cmp(s, b, L) < 0) {
            best = y;
            big_copy(b, s, L);
        }
    }
    if (best >= 0) big_copy(SB_SLACK(M, x), b, L);
    return best;
}

/* One stage from the exposed root blossom r. */
static void stage(Matcher *M, int r)
{
    int n = M->n, L = M->L;
    for (int x = 0; x < 2 * n; x++) {
        M->label[x] = FREE;
        M->lfrom[x] = M->lto[x] = -1;
    }
    for (int v = 0; v < n; v++) {
        M->reached[v] = 0;
        M->best_s[v] = -1;
        M->sb[v] = -1;
    }
    M->qhead = M->qtail = 0;
    int root = M->base[r];
    label_s(M, root, -1);
    limb_t *sl = M->t1, *delta = M->delta;
    for (;;) {
        while (M->qhead < M->qtail) {
            int v = M->queue[M->qhead++];
            if (M->label[M->top[v]] != S_LABEL) continue;
            for (int w = 0; w < n; w++) {
                if (w == v || !M->active[w]) continue;
                int bv = M->top[v], bw = M->top[w];
                if (bv == bw) continue;
                const limb_t *ww = W2(M, v, w);
                if (big_is_zero(ww, L)) continue;
                edge_slack(M, v, w, sl);
                int tight = big_is_zero(sl, L);
                if (M->label[bw] == S_LABEL) {
                    if (tight) {
                        int bb = common_base(M, v, w);
                        if (bb < 0) { /* one tree per stage: both ends must be in it */
                            M->broken = 1;
                            return;
                        }
                        add_blossom(M, bb, v, w);
                    } else {
                        /* keep v's least-slack edge to another S-blossom */
                        if (M->sb[v] < 0 || big_cmp(sl, SB_SLACK(M, v), L) < 0) {
                            M->sb[v] = w;
                            big_copy(SB_SLACK(M, v), sl, L);
                        }
                    }
                } else if (M->label[bw] == T_LABEL) {
                    if (bw == w || M->reached[w]) continue;
                    if (tight) {
                        M->reached[w] = 1;
                        M->reach_from[w] = v;
                    } else if (M->best_s[w] < 0 || big_cmp(sl, BEST_SLACK(M, w), L) < 0) {
                        M->best_s[w] = v;
                        big_copy(BEST_SLACK(M, w), sl, L);
                    }
                } else {
                    if (tight) {
                        if (M->mate[M->base[bw]] < 0) {
                            augment(M, v, w);
                            goto end_of_stage;
                        }
                        label_t(M, w, v);
                    } else if (M->best_s[w] < 0 || big_cmp(sl, BEST_SLACK(M, w), L) < 0) {
                        M->best_s[w] = v;
                        big_copy(BEST_SLACK(M, w), sl, L);
                    }
                }
            }
        }
        /* no tight edge leads further: change the duals */
        int type = 0, tv = -1;
        /* type 1: an S vertex reaches zero (the root first among equals: nothing to flip) */
        for (int v = 0; v < n; v++) {
            if (!M->active[v] || M->label[M->top[v]] != S_LABEL) continue;
            int c = type ? big_cmp(DUAL(M, v), delta, L) : -1;
            if (c < 0 || (c == 0 && v == root)) {
                type = 1;
                tv = v;
                big_copy(delta, DUAL(M, v), L);
            }
        }
        /* type 2: an edge from S to a free vertex becomes tight */
        for (int v = 0; v < n; v++) {
            if (!M->active[v] || M->best_s[v] < 0 || M->label[M->top[v]] != FREE) continue;
            if (big_cmp(BEST_SLACK(M, v), delta, L) < 0) {
                type = 2;
                tv = M->best_s[v];
                big_copy(delta, BEST_SLACK(M, v), L);
            }
        }
        /* type 3: an edge between two S-blossoms becomes tight (both ends move); a vertex whose
           best edge has come inside its own blossom looks again */
        for (int x = 0; x < n; x++) {
            if (!M->active[x] || M->label[M->top[x]] != S_LABEL) continue;
            int y = M->sb[x];
            if (y >= 0 && M->top[y] == M->top[x]) y = M->sb[x] = rescan_best_s(M, x);
            if (y < 0) continue;
            big_copy(sl, SB_SLACK(M, x), L);
            big_half(sl, L);
            if (big_cmp(sl, delta, L) < 0) {
                type = 3;
                tv = x;
                big_copy(delta, sl, L);
            }
        }
        /* type 4: a T-blossom's dual reaches zero */
        for (int b = n; b < 2 * n; b++) {
            if (M->base[b] < 0 || M->parent[b] >= 0 || M->label[b] != T_LABEL) continue;
            if (big_cmp(DUAL(M, b), delta, L) < 0) {
                type = 4;
                tv = b;
                big_copy(delta, DUAL(M, b), L);
            }
        }
        /* apply */
        if (!big_is_zero(delta, L)) {
            for (int v = 0; v < n; v++) {
                if (!M->active[v]) continue;
                char lb = M->label[M->top[v]];
                if (lb == S_LABEL) {
                    big_sub(DUAL(M, v), DUAL(M, v), delta, L);
                    /* both ends of (v, sb[v]) are S vertices: its slack falls twice */
                    if (M->sb[v] >= 0) {
                        big_sub(SB_SLACK(M, v), SB_SLACK(M, v), delta, L);
                        big_sub(SB_SLACK(M, v), SB_SLACK(M, v), delta, L);
                    }
                } else if (lb == T_LABEL) {
                    big_add(DUAL(M, v), DUAL(M, v), delta, L);
                } else if (M->best_s[v] >= 0) {
                    /* a free vertex keeps its dual; the S end of its best edge loses delta */
                    big_sub(BEST_SLACK(M, v), BEST_SLACK(M, v), delta, L);
                }
            }
            for (int b = n; b < 2 * n; b++) {
                if (M->base[b] < 0 || M->parent[b] >= 0) continue;
                if (M->label[b] == S_LABEL) big_add(DUAL(M, b), DUAL(M, b), delta, L);
                else if (M->label[b] == T_LABEL) big_sub(DUAL(M, b), DUAL(M, b), delta, L);
            }
        }
        if (type == 1) {
            if (tv != root) flip_to_root(M, tv, -1);
            goto end_of_stage;
        } else if (type == 2 || type == 3) {
            M->queue[M->qtail++] = tv;
        } else if (type == 4) {
            expand_blossom(M, tv, 0);
        } else {
            M->broken = 1; /* the root is an S vertex: type 1 always exists */
            return;
        }
    }
end_of_stage:
    for (int b = n; b < 2 * n; b++) {
        if (M->base[b] >= 0 && M->parent[b] < 0 && M->label[b] == S_LABEL && big_is_zero(DUAL(M, b), L))
            expand_blossom(M, b, 1);
    }
}



/* Re-optimise after changes: one stage per exposed vertex whose dual is positive. */
static void matcher_solve(Matcher *M)
{
    if (M->broken) return;
    int i = 0;
    while (i < M->ndirty) {
        int v = M->dirty[i++];
        M->in_dirty[v] = 0;
        if (!M->active[v]) continue;
        int b = M->top[v];
        int bb = M->base[b];
        if (M->mate[bb] >= 0 || big_is_zero(DUAL(M, bb), M->L)) continue;
        stage(M, b);
        if (M->broken) return;
        /* the stage may expose no new positive-dual vertex, but a flip can hand the root's role on */
        if (M->mate[bb] < 0 && !big_is_zero(DUAL(M, bb), M->L)) {
            M->in_dirty[bb] = 0;
            mark_dirty(M, bb);
        }
    }
    M->ndirty = 0;
}

/* The current partner of v, v itself when exposed. */
static inline int partner(const Matcher *M, int v) { return M->mate[v] >= 0 ? M->mate[v] : v; }

/* ------------------------------------------------------------------------------------------
 * The Dutch bracket procedure.
 * ---------------------------------------------------------------------------------------- */

enum { COLOUR_NONE = 0, COLOUR_WHITE = 1, COLOUR_BLACK = 2 };
enum { FLOAT_NONE = 0, FLOAT_DOWN = 1, FLOAT_UP = 2 };

typedef struct {
    int n;
    int rounds_played;
    int *score;      /* with acceleration, in tenths */
    char *eligible;  /* may receive the pairing-allocated bye ([C2]) */
    char *pref;      /* colour preference (1.7) */
    int *imbalance;  /* |colour difference| (1.6) */
    char *repeated;  /* the colour of the last two played games when equal */
    char *strong;    /* strong colour preference */
    char *float1;    /* float of the previous round (1.4) */
    char *float2;    /* float two rounds before */
    int *played;     /* games played */
    char *topscorer; /* 1.8, only when the last round is paired */
    char *forbidden; /* n*n: [C1] and forbidden pairs */
} Field;

typedef struct {
    int L;
    int P;            /* bits for a count of pairs (the largest scoregroup) */
    int S;            /* bits for the per-scoregroup counts */
    int *group;       /* player -> scoregroup index */
    int *shift;       /* scoregroup -> its offset inside an S-wide field */
    /* field offsets, lowest first */
    int ord, fs4, fs3, fs2, fs1, fl4, fl3, fl2, fl1, col4, col3, col2, col1, c9, sn, pn, sc, pc, topf;
} Layout;

static int bits_for(long x)
{
    int r = 0;
    while (x >= 1) {
        r++;
        x >>= 1;
    }
    return r;
}

static inline int absolute_imbalance(const Field *F, int p) { return F->imbalance[p] > 1; }

static inline int absolute_pref(const Field *F, int p) { return absolute_imbalance(F, p) || F->repeated[p] != COLOUR_NONE; }

static inline int invert_colour(int c) { return c == COLOUR_WHITE ? COLOUR_BLACK : c == COLOUR_BLACK ? COLOUR_WHITE : COLOUR_NONE; }

/* [C1], [C3] and the forbidden pairs: may these two meet at all? */
static int compatible(const Field *F, int a, int b)
{
    if (F->forbidden[(size_t)a * F->n + b]) return 0;
    return !absolute_pref(F, a) || !absolute_pref(F, b) || F->pref[a] != F->pref[b] || F->topscorer[a] || F->topscorer[b];
}

typedef struct {
    const Field *F;
    const Layout *Y;
    int bye_score;
    int single;       /* [C9] applies: the one downfloater of the bracket will take the bye */
    int *unplayed_rank; /* player -> rank by games played among those on the bye score */
} WeightContext;

/*
 * The weight of a pair (h ranked above l) in the current bracket, or zero when they may not
 * meet. `in_cur`: l is in the current bracket; `in_next`: l is in the next scoregroup.
 */
static void edge_weight(const WeightContext *X, int h, int l, int in_cur, int in_next, limb_t *out)
{
    const Field *F = X->F;
    const Layout *Y = X->Y;
    int L = Y->L;
    big_zero(out, L);
    if (!compatible(F, h, l)) return;
    int cand_h = F->eligible[h] && F->score[h] <= X->bye_score;
    int cand_l = F->eligible[l] && F->score[l] <= X->bye_score;
    /* [C4] a complete pairing, [C2] and [C5] the bye's assignee */
    big_add_at(out, (uint64_t)(1 + !cand_h + !cand_l), Y->topf, L);
    if (in_cur) {
        /* [C6] pairs in the bracket, [C7] the scores of those paired */
        big_add_at(out, 1, Y->pc, L);
        big_add_at(out, 1, Y->sc + Y->shift[Y->group[h]], L);
    }
    if (in_next) {
        /* [C8] the same for the next bracket */
        big_add_at(out, 1, Y->pn, L);
        big_add_at(out, 1, Y->sn + Y->shift[Y->group[h]], L);
    }
    if (X->single) {
        /* [C9] the bye's assignee has played the most games */
        if (F->score[h] == X->bye_score) big_add_at(out, (uint64_t)X->unplayed_rank[h], Y->c9, L);
        if (F->score[l] == X->bye_score) big_add_at(out, (uint64_t)X->unplayed_rank[l], Y->c9, L);
    }
    if (!in_cur) return;
    /* colour criteria [C10]-[C13]; p is the lower player, o the higher */
    int p = l, o = h;
    int pp = F->pref[p], op = F->pref[o];
    int c10 = !absolute_imbalance(F, p) || !absolute_imbalance(F, o) || pp != op;
    int c11;
    if (!absolute_pref(F, p) || !absolute_pref(F, o) || pp != op) {
        c11 = 1;
    } else if (F->imbalance[p] == F->imbalance[o]) {
        c11 = F->repeated[p] == COLOUR_NONE || F->repeated[p] != F->repeated[o];
    } else {
        int loser = F->imbalance[p] > F->imbalance[o] ? o : p;
        c11 = F->repeated[loser] != invert_colour(pp);
    }
    int c12 = pp != op || pp == COLOUR_NONE || op == COLOUR_NONE;
    int c13 = (!F->strong[p] && !absolute_pref(F, p)) || (!F->strong[o] && !absolute_pref(F, o))
              || (absolute_pref(F, p) && absolute_pref(F, o)) || pp != op;
    big_add_at(out, (uint64_t)c10, Y->col1, L);
    big_add_at(out, (uint64_t)c11, Y->col2, L);
    big_add_at(out, (uint64_t)c12, Y->col3, L);
    big_add_at(out, (uint64_t)c13, Y->col4, L);
    int higher_score = F->score[h] > F->score[l];
    if (F->rounds_played >= 1) {
        /* [C14] resident downfloaters of the previous round, [C15] MDP opponents who upfloated */
        big_add_at(out, (uint64_t)(F->float1[l] == FLOAT_DOWN), Y->fl1, L);
        big_add_at(out, (uint64_t)(!higher_score && F->float1[h] == FLOAT_DOWN), Y->fl1, L);
        big_add_at(out, (uint64_t)!(higher_score && F->float1[l] == FLOAT_UP), Y->fl2, L);
        /* [C18], [C19]: the same weighted by score */
        big_add_at(out, (uint64_t)(F->float1[l] == FLOAT_DOWN), Y->fs1 + Y->shift[Y->group[l]], L);
        big_add_at(out, (uint64_t)(F->float1[h] == FLOAT_DOWN), Y->fs1 + Y->shift[Y->group[h]], L);
        if (!(F->float1[l] == FLOAT_UP && higher_score)) big_add_at(out, 1, Y->fs2 + Y->shift[Y->group[h]], L);
    }
    if (F->rounds_played >= 2) {
        /* [C16], [C17], [C20], [C21]: two rounds before */
        big_add_at(out, (uint64_t)(F->float2[l] == FLOAT_DOWN), Y->fl3, L);
        big_add_at(out, (uint64_t)(!higher_score && F->float2[h] == FLOAT_DOWN), Y->fl3, L);
        big_add_at(out, (uint64_t)!(higher_score && F->float2[l] == FLOAT_UP), Y->fl4, L);
        big_add_at(out, (uint64_t)(F->float2[l] == FLOAT_DOWN), Y->fs3 + Y->shift[Y->group[l]], L);
        big_add_at(out, (uint64_t)(F->float2[h] == FLOAT_DOWN), Y->fs3 + Y->shift[Y->group[h]], L);
        if (!(F->float2[l] == FLOAT_UP && higher_score)) big_add_at(out, 1, Y->fs4 + Y->shift[Y->group[h]], L);
    }
}

typedef struct {
    Matcher *M;
    const Field *F;
    Layout Y;
    WeightContext X;
    limb_t *base;       /* m*m*L weights of the current bracket, [larger][smaller] by position */
    int bm;             /* dimension of base */
    int *final_mate;    /* partner once the pair is final; -1 before; -2 the bye */
    char *matched;      /* decided to be paired in this bracket (the "matched" marks) */
    char *removed;
    int *stable;        /* the matching of the last solve */
    limb_t *wbuf;       /* scratch: weights for one vertex */
    int *ubuf;
    limb_t *tmp;
} Dutch;

#define BASE(D, li, hi) ((D)->base + ((size_t)(li) * (D)->bm + (hi)) * (D)->Y.L)

/* A player's partner in the matching of the last solve (itself when exposed): the decisions read
   that matching, not the one being changed for the next solve. */
static inline int sm(const Dutch *D, int v) { return D->stable[v]; }

static void solve(Dutch *D)
{
    matcher_solve(D->M);
    for (int v = 0; v < D->M->n; v++) D->stable[v] = D->removed[v] ? D->final_mate[v] : partner(D->M, v);
}

/* The weight the matching sees: twice the criteria's weight (slacks are then halved exactly). */
static void matcher_weight(limb_t *e, int L) { big_double(e, L); }

/* Write w(v, u) = w(u, v) without touching the duals (a batch ends with `redual`). */
static void put_edge(Dutch *D, int v, int u, limb_t *w)
{
    int L = D->Y.L;
    matcher_weight(w, L);
    big_copy(W2(D->M, v, u), w, L);
    big_copy(W2(D->M, u, v), w, L);
}

/* Set w(v, u) for the listed u from weights in criteria units. */
static void set_edges(Dutch *D, int v, int count)
{
    int L = D->Y.L;
    for (int i = 0; i < count; i++) matcher_weight(D->wbuf + (size_t)i * L, L);
    matcher_set_edges(D->M, v, D->ubuf, D->wbuf, count);
}

static void finalise(Dutch *D, int a, int b)
{
    D->final_mate[a] = b;
    D->final_mate[b] = a;
    matcher_remove(D->M, a);
    matcher_remove(D->M, b);
    D->removed[a] = D->removed[b] = 1;
}

/*
 * Pair the round. Returns 0 with mate[] filled (the bye's entry -1), 1 when no pairing
 * complies with the absolute criteria, -1 when out of memory, -2 when the matching met a state
 * the algorithm rules out (a fault of this code, never a pairing).
 */
static int dutch_pair(const Field *F, int *result)
{
    int n = F->n;
    if (n == 0) return 0;
    Dutch D;
    memset(&D, 0, sizeof(D));
    D.F = F;
    Layout *Y = &D.Y;
    /* scoregroups, in order of decreasing score */
    Y->group = malloc(sizeof(int) * n);
    int *counts = calloc(n, sizeof(int));
    Y->shift = calloc(n, sizeof(int));
    int ngroups = 0;
    for (int i = 0; i < n; i++) {
        if (i == 0 || F->score[i] != F->score[i - 1]) ngroups++;
        Y->group[i] = ngroups - 1;
        counts[ngroups - 1]++;
    }
    int S = 0, maxcount = 0;
    for (int g = ngroups - 1; g >= 0; g--) {
        Y->shift[g] = S;
        S += bits_for(counts[g]);
        if (counts[g] > maxcount) maxcount = counts[g];
    }
    int P = bits_for(maxcount);
    Y->S = S;
    Y->P = P;
    int pos = 0;
    Y->ord = pos;
    pos += 1 + 3 * P;
    if (F->rounds_played >= 2) {
        Y->fs4 = pos; pos += S;
        Y->fs3 = pos; pos += S;
    }
    if (F->rounds_played >= 1) {
        Y->fs2 = pos; pos += S;
        Y->fs1 = pos; pos += S;
    }
    if (F->rounds_played >= 2) {
        Y->fl4 = pos; pos += P;
        Y->fl3 = pos; pos += P;
    }
    if (F->rounds_played >= 1) {
        Y->fl2 = pos; pos += P;
        Y->fl1 = pos; pos += P;
    }
    Y->col4 = pos; pos += P;
    Y->col3 = pos; pos += P;
    Y->col2 = pos; pos += P;
    Y->col1 = pos; pos += P;
    Y->c9 = pos; pos += 2 * P;
    Y->sn = pos; pos += S;
    Y->pn = pos; pos += P;
    Y->sc = pos; pos += S;
    Y->pc = pos; pos += P;
    Y->topf = pos;
    /* the top field holds up to 3 per pair; the matching needs room for sums of duals */
    int topbits = pos + 2 + bits_for(n) + 6;
    int L = (topbits + 63) / 64;
    Y->L = L;
    int rc = -1;
    Matcher *M = matcher_new(n, L);
    D.M = M;
    D.final_mate = malloc(sizeof(int) * n);
    D.matched = calloc(n, 1);
    D.removed = calloc(n, 1);
    D.stable = malloc(sizeof(int) * n);
    D.wbuf = calloc((size_t)n * L, sizeof(limb_t));
    D.ubuf = malloc(sizeof(int) * n);
    D.tmp = calloc(L, sizeof(limb_t));
    D.base = calloc((size_t)n * n * L + 1, sizeof(limb_t));
    D.bm = n;
    int *unplayed_rank = calloc(n, sizeof(int));
    int *cur = malloc(sizeof(int) * n);
    int *remainder = malloc(sizeof(int) * n);
    int *newcur = malloc(sizeof(int) * n);
    limb_t *initial = calloc(L, sizeof(limb_t));
    if (!Y->group || !counts || !Y->shift || !M || !D.final_mate || !D.matched || !D.removed || !D.stable || !D.wbuf
        || !D.ubuf || !D.tmp || !D.base || !unplayed_rank || !cur || !remainder || !newcur || !initial)
        goto done;
    for (int v = 0; v < n; v++) {
        D.final_mate[v] = -1;
        M->active[v] = 1;
    }
    /* every weight stays below 2^(pos+2); duals start at twice that (weights are doubled) */
    big_zero(initial, L);
    big_add_at(initial, 1, pos + 3, L);
    big_copy(M->reset_dual, initial, L);
    big_double(M->reset_dual, L);

    WeightContext *X = &D.X;
    X->F = F;
    X->Y = Y;
    X->bye_score = 0;
    X->single = 0;
    X->unplayed_rank = unplayed_rank;

    /* [C4]: a complete pairing must exist; with an odd number, find the lowest possible score of
       the bye's assignee ([C5]) and whether the top scoregroup downfloats only that player */
    for (int v = 0; v < n; v++) {
        for (int u = 0; u < v; u++) {
            limb_t *e = W2(M, v, u);
            big_zero(e, L);
            if (n % 2 == 1) {
                if (compatible(F, u, v)) {
                    big_add_at(e, (uint64_t)(1 + !F->eligible[v] + !F->eligible[u]), S + P, L);
                    big_add_at(e, (uint64_t)(Y->shift[Y->group[v]] + Y->shift[Y->group[u]]), P, L);
                    big_add_at(e, (uint64_t)(F->score[v] >= F->score[0]), 0, L);
                }
            } else {
                edge_weight(X, u, v, 0, 0, e);
            }
            matcher_weight(e, L);
            big_copy(W2(M, u, v), e, L);
        }
    }
    matcher_start(M);
    solve(&D);
    {
        int unmatched = 0;
        for (int v = 0; v < n; v++) {
            if (M->mate[v] < 0) {
                if (unmatched || !F->eligible[v]) {
                    rc = 1;
                    goto done;
                }
                unmatched = 1;
            }
        }
    }
    if (n % 2 == 1) {
        int bye = -1;
        for (int v = 0; v < n; v++)
            if (M->mate[v] < 0) {
                bye = v;
                break;
            }
        X->bye_score = F->score[bye];
        int topscore = F->score[0];
        if (X->bye_score >= topscore) {
            X->single = 1;
            for (int v = 0; v < n && F->score[v] >= topscore; v++)
                if (F->score[partner(M, v)] < topscore) {
                    X->single = 0;
                    break;
                }
        }
        /* rank by games played, most first; equal counts share the last rank among them */
        int cnt = 0;
        int *played = D.ubuf;
        for (int v = 0; v < n; v++)
            if (F->score[v] == X->bye_score) played[cnt++] = F->played[v];
        for (int i = 1; i < cnt; i++) {
            int x = played[i], j = i - 1;
            while (j >= 0 && played[j] < x) {
                played[j + 1] = played[j];
                j--;
            }
            played[j + 1] = x;
        }
        for (int v = 0; v < n; v++) {
            if (F->score[v] != X->bye_score) continue;
            int r = 0;
            for (int i = 0; i < cnt; i++)
                if (played[i] == F->played[v]) r = i;
            unplayed_rank[v] = r;
        }
        /* all weights again, now that the bye's score is known */
        for (int v = 0; v < n; v++)
            for (int u = 0; u < v; u++) {
                limb_t *e = W2(M, v, u);
                edge_weight(X, u, v, 0, 0, e);
                matcher_weight(e, L);
                big_copy(W2(M, u, v), e, L);
            }
        /* from the matching just found: it is most of the way to the new optimum */
        for (int v = 0; v < n; v++) D.ubuf[v] = v;
        matcher_redual(M, D.ubuf, n);
        solve(&D);
    }

    /* the brackets, from the top */
    int m = 0, b = 0, beginv = 0, next_it = 0;
    while (next_it < n && F->score[next_it] >= F->score[0]) cur[m++] = next_it++;
    while (m > 1 || next_it < n) {
        int c = m;
        int next_beginv = beginv + (c - b);
        int group_start = next_it;
        while (next_it < n && F->score[next_it] >= F->score[group_start]) cur[m++] = next_it++;
        D.bm = m;
        /* weights of the bracket and the next scoregroup; pairs of two moved-down players keep theirs */
        for (int li = b; li < m; li++) {
            for (int hi = 0; hi < li; hi++) {
                limb_t *e = BASE(&D, li, hi);
                edge_weight(X, cur[hi], cur[li], li < c, li >= c, e);
                big_copy(D.tmp, e, L);
                put_edge(&D, cur[li], cur[hi], D.tmp);
            }
        }
        matcher_redual(M, cur + b, m - b);
        solve(&D);

        /* Article 4.4: which moved-down players are paired, the higher ones first */
        int mdp_score = 0, remaining = 0, remaining_matched = 0;
        for (int i = 0; i < b; i++) {
            int v = cur[i];
            if (i == 0 || F->score[v] < mdp_score) {
                mdp_score = F->score[v];
                remaining = remaining_matched = 0;
                for (int j = i; j < m && F->score[cur[j]] >= mdp_score; j++) {
                    remaining++;
                    int p = sm(&D, cur[j]);
                    if (p >= beginv && p < next_beginv) remaining_matched++;
                }
            }
            if (!remaining_matched) continue;
            if (remaining <= remaining_matched) {
                D.matched[v] = 1;
                continue;
            }
            remaining--;
            int p = sm(&D, v);
            if (p < beginv || p >= next_beginv) {
                int c2 = 0;
                for (int r = b; r < c; r++) {
                    limb_t *e = BASE(&D, r, i);
                    if (big_is_zero(e, L)) continue;
                    big_copy(D.wbuf + (size_t)c2 * L, e, L);
                    big_add_at(D.wbuf + (size_t)c2 * L, 1, 0, L);
                    D.ubuf[c2++] = cur[r];
                }
                set_edges(&D, v, c2);
                solve(&D);
                p = sm(&D, v);
            }
            if (p >= beginv && p < next_beginv) {
                D.matched[v] = 1;
                remaining_matched--;
                int c2 = 0;
                for (int r = b; r < c; r++) {
                    limb_t *e = BASE(&D, r, i);
                    if (big_is_zero(e, L)) continue;
                    big_copy(D.wbuf + (size_t)c2 * L, e, L);
                    big_add_at(D.wbuf + (size_t)c2 * L, (uint64_t)(c - b) + 1, 0, L);
                    D.ubuf[c2++] = cur[r];
                }
                set_edges(&D, v, c2);
            }
        }

        /* their opponents: each paired moved-down player takes the highest resident it can */
        for (int i = 0; i < b; i++) {
            int v = cur[i];
            if (!D.matched[v]) continue;
            uint64_t addend = (uint64_t)m;
            int c2 = 0;
            for (int r = c - 1; r >= b; r--) {
                if (D.matched[cur[r]]) continue;
                limb_t *e = BASE(&D, r, i);
                if (big_is_zero(e, L)) continue;
                big_copy(D.wbuf + (size_t)c2 * L, e, L);
                big_add_at(D.wbuf + (size_t)c2 * L, addend, 0, L);
                D.ubuf[c2++] = cur[r];
                addend++;
            }
            set_edges(&D, v, c2);
            solve(&D);
            int mv = sm(&D, v);
            D.matched[mv] = 1;
            finalise(&D, v, mv);
        }

        /* the remainder (Article 3.6): the residents not paired with moved-down players */
        int rn = 0, rpairs = 0;
        for (int r = b; r < c; r++) {
            int v = cur[r];
            int p = sm(&D, v);
            if (p < beginv) continue;
            remainder[rn++] = r;
            if (p < v) rpairs++;
        }
        /* exchanges (Article 4.3): fewest players moved between S1 and S2, then the smallest
           difference of the numbers moved */
#define EXW(out, hpos, lpos, ridx)                                                           \
    do {                                                                                     \
        big_copy((out), BASE(&D, (lpos), (hpos)), L);                                        \
        if (!big_is_zero((out), L)) {                                                        \
            if ((ridx) < rpairs) big_add_at((out), 1, 2 * P + 1, L);                         \
            big_sub_small((out), 2 * (uint64_t)(ridx), L);                                   \
        }                                                                                    \
    } while (0)
        for (int pi = 0; pi < rn; pi++) {
            int hpos = remainder[pi];
            int c2 = 0;
            for (int oi = pi + 1; oi < rn; oi++) {
                EXW(D.wbuf + (size_t)c2 * L, hpos, remainder[oi], pi);
                D.ubuf[c2++] = cur[remainder[oi]];
            }
            set_edges(&D, cur[hpos], c2);
        }
        solve(&D);
        int exchanges = 0;
        for (int pi = 0; pi < rpairs && pi < rn; pi++) {
            int v = cur[remainder[pi]];
            int p = sm(&D, v);
            exchanges += p <= v || p >= next_beginv;
        }
        /* S1 players moved to S2: the lowest ones first */
        int left = exchanges;
        for (int pi = rpairs - 1; pi >= 0 && left; pi--) {
            int hpos = remainder[pi];
            int v = cur[hpos];
            int p = sm(&D, v);
            if (p > v && p < next_beginv) {
                int c2 = 0;
                for (int oi = pi + 1; oi < rn; oi++) {
                    limb_t *e = D.wbuf + (size_t)c2 * L;
                    EXW(e, hpos, remainder[oi], pi);
                    if (big_is_zero(e, L)) continue;
                    big_sub_small(e, 1, L);
                    D.ubuf[c2++] = cur[remainder[oi]];
                }
                set_edges(&D, v, c2);
                solve(&D);
                p = sm(&D, v);
            }
            int exchange = p <= v || p >= next_beginv;
            left -= exchange;
            int c2 = 0;
            for (int oi = pi + 1; oi < rn; oi++) {
                if (exchange) big_zero(BASE(&D, remainder[oi], hpos), L);
                EXW(D.wbuf + (size_t)c2 * L, hpos, remainder[oi], pi);
                D.ubuf[c2++] = cur[remainder[oi]];
            }
            set_edges(&D, v, c2);
        }
        /* S2 players moved to S1: the highest ones first */
        left = exchanges;
        for (int pi = rpairs; pi < rn && left > 1; pi++) {
            int hpos = remainder[pi];
            int v = cur[hpos];
            int p = sm(&D, v);
            int already = p > v && p < next_beginv;
            if (!already) {
                int c2 = 0;
                for (int oi = pi + 1; oi < rn; oi++) {
                    limb_t *e = D.wbuf + (size_t)c2 * L;
                    EXW(e, hpos, remainder[oi], pi);
                    if (big_is_zero(e, L)) continue;
                    big_add_at(e, 1, 0, L);
                    D.ubuf[c2++] = cur[remainder[oi]];
                }
                set_edges(&D, v, c2);
                solve(&D);
                p = sm(&D, v);
            }
            int exchange = p > v && p < next_beginv;
            if (exchange) {
                left--;
                int c2 = 0;
                for (int oi = 0; oi < pi; oi++) {
                    big_zero(BASE(&D, hpos, remainder[oi]), L);
                    big_zero(D.wbuf + (size_t)c2 * L, L);
                    D.ubuf[c2++] = cur[remainder[oi]];
                }
                for (int x = c; x < m; x++) {
                    big_zero(BASE(&D, x, hpos), L);
                    big_zero(D.wbuf + (size_t)c2 * L, L);
                    D.ubuf[c2++] = cur[x];
                }
                set_edges(&D, v, c2);
            }
            if (!already) {
                int c2 = 0;
                for (int oi = pi + 1; oi < rn; oi++) {
                    EXW(D.wbuf + (size_t)c2 * L, hpos, remainder[oi], pi);
                    D.ubuf[c2++] = cur[remainder[oi]];
                }
                set_edges(&D, v, c2);
            }
        }
        /* the exchanges are decided: S1 players pair only downwards, S2 players only upwards */
        for (int pi = 0; pi < rn; pi++) {
            int hpos = remainder[pi];
            int v = cur[hpos];
            int pv = sm(&D, v);
            int c2 = 0;
            for (int oi = pi + 1; oi < rn; oi++) {
                int lpos = remainder[oi];
                int o = cur[lpos];
                int po = sm(&D, o);
                if (pv <= v || pv >= next_beginv || (po > o && po < next_beginv)) big_zero(BASE(&D, lpos, hpos), L);
                big_copy(D.wbuf + (size_t)c2 * L, BASE(&D, lpos, hpos), L);
                D.ubuf[c2++] = o;
            }
            set_edges(&D, v, c2);
        }
#undef EXW
        /* Article 4.2: each S1 player, in order, takes the highest S2 player it can */
        for (int pi = 0; pi < rn; pi++) {
            int hpos = remainder[pi];
            int v = cur[hpos];
            int pv = sm(&D, v);
            if (!(pv > v && pv < next_beginv)) continue;
            uint64_t addend = 0;
            int c2 = 0;
            for (int oi = rn - 1; oi >= 0; oi--) {
                int lpos = remainder[oi];
                if (lpos <= hpos || D.matched[cur[lpos]]) continue;
                limb_t *e = BASE(&D, lpos, hpos);
                if (!big_is_zero(e, L)) {
                    big_copy(D.wbuf + (size_t)c2 * L, e, L);
                    big_add_at(D.wbuf + (size_t)c2 * L, addend, 0, L);
                    D.ubuf[c2++] = cur[lpos];
                }
                addend++;
            }
            set_edges(&D, v, c2);
            solve(&D);
            int mv = sm(&D, v);
            D.matched[v] = D.matched[mv] = 1;
            finalise(&D, v, mv);
        }

        /* the next bracket: the players left over, then the next scoregroup */
        int single = (n % 2 == 1) && group_start < n && X->bye_score >= F->score[group_start];
        int nm = 0, nb = 0;
        for (int i = 0; i < m; i++) {
            int v = cur[i];
            if (i < c && D.matched[v]) continue;
            newcur[nm++] = v;
            if (i < c) nb++;
            if (single && F->score[sm(&D, v)] < F->score[group_start]) single = 0;
        }
        X->single = single;
        if (nm == m && group_start >= n) {
            /* nothing was paired and no scoregroup is left: the matching stands as it is */
            for (int i = 0; i < nm; i++) {
                int v = newcur[i], p = sm(&D, v);
                if (p != v && D.final_mate[v] < 0) finalise(&D, v, p);
            }
            break;
        }
        memcpy(cur, newcur, sizeof(int) * nm);
        m = nm;
        b = nb;
        beginv = next_beginv;
    }
    if (M->broken) {
        rc = -2;
        goto done;
    }
    for (int v = 0; v < n; v++) result[v] = D.final_mate[v] >= 0 ? D.final_mate[v] : -1;
    rc = 0;
done:
    free(Y->group); free(counts); free(Y->shift);
    matcher_free(M);
    free(D.final_mate); free(D.matched); free(D.removed); free(D.stable); free(D.wbuf); free(D.ubuf); free(D.tmp); free(D.base);
    free(unplayed_rank); free(cur); free(remainder); free(newcur); free(initial);
    return rc;
}

/* ------------------------------------------------------------------------------------------
 * Python interface.
 * ---------------------------------------------------------------------------------------- */

static int read_ints(PyObject *seq, Py_ssize_t n, int *out, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd values", what, n);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        out[i] = (int)x;
    }
    Py_DECREF(fast);
    return 0;
}

static int read_chars(PyObject *seq, Py_ssize_t n, char *out, const char *what)
{
    int *tmp = malloc(sizeof(int) * (n ? n : 1));
    if (!tmp) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = read_ints(seq, n, tmp, what);
    if (rc == 0)
        for (Py_ssize_t i = 0; i < n; i++) out[i] = (char)tmp[i];
    free(tmp);
    return rc;
}

PyDoc_STRVAR(pair_doc,
"pair(scores, eligible, prefs, imbalances, repeated, strong, float1, float2, played, topscorer,\n"
"     forbidden, rounds_played) -> list[int] | None\n"
"\n"
"Pair one round by the FIDE Dutch system (C.04.3, 2025 edition). Players are given in pairing\n"
"order (score, then pairing number); every sequence holds one value per player: score with\n"
"acceleration in tenths, bye eligibility ([C2]), colour preference (0 none, 1 white, 2 black),\n"
"|colour difference|, repeated colour (0, 1, 2), strong preference, float of the previous round\n"
"and of the one before (0 none, 1 down, 2 up), games played, topscorer (1.8). `forbidden` is a\n"
"sequence of index pairs that may not meet. Returns each player's opponent (-1 for the bye), or\n"
"None when no pairing complies with the absolute criteria.");

static PyObject *py_pair(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *scores, *eligible, *prefs, *imbalances, *repeated, *strong, *float1, *float2, *played, *topscorer, *forbidden;
    int rounds_played;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOi", &scores, &eligible, &prefs, &imbalances, &repeated, &strong, &float1,
                          &float2, &played, &topscorer, &forbidden, &rounds_played))
        return NULL;
    Py_ssize_t n = PySequence_Size(scores);
    if (n < 0) return NULL;
    Field F;
    memset(&F, 0, sizeof(F));
    F.n = (int)n;
    F.rounds_played = rounds_played;
    size_t nn = n ? (size_t)n : 1;
    F.score = malloc(sizeof(int) * nn);
    F.eligible = malloc(nn);
    F.pref = malloc(nn);
    F.imbalance = malloc(sizeof(int) * nn);
    F.repeated = malloc(nn);
    F.strong = malloc(nn);
    F.float1 = malloc(nn);
    F.float2 = malloc(nn);
    F.played = malloc(sizeof(int) * nn);
    F.topscorer = malloc(nn);
    F.forbidden = calloc(nn * nn, 1);
    int *result = malloc(sizeof(int) * nn);
    PyObject *out = NULL;
    if (!F.score || !F.eligible || !F.pref || !F.imbalance || !F.repeated || !F.strong || !F.float1 || !F.float2
        || !F.played || !F.topscorer || !F.forbidden || !result) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_ints(scores, n, F.score, "scores") || read_chars(eligible, n, F.eligible, "eligible")
        || read_chars(prefs, n, F.pref, "prefs") || read_ints(imbalances, n, F.imbalance, "imbalances")
        || read_chars(repeated, n, F.repeated, "repeated") || read_chars(strong, n, F.strong, "strong")
        || read_chars(float1, n, F.float1, "float1") || read_chars(float2, n, F.float2, "float2")
        || read_ints(played, n, F.played, "played") || read_chars(topscorer, n, F.topscorer, "topscorer"))
        goto done;
    {
        PyObject *fast = PySequence_Fast(forbidden, "forbidden");
        if (!fast) goto done;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *pairobj = PySequence_Fast_GET_ITEM(fast, i);
            int ab[2];
            if (read_ints(pairobj, 2, ab, "forbidden pair")) {
                Py_DECREF(fast);
                goto done;
            }
            if (ab[0] < 0 || ab[0] >= n || ab[1] < 0 || ab[1] >= n) {
                PyErr_SetString(PyExc_ValueError, "forbidden pair out of range");
                Py_DECREF(fast);
                goto done;
            }
            F.forbidden[(size_t)ab[0] * n + ab[1]] = 1;
            F.forbidden[(size_t)ab[1] * n + ab[0]] = 1;
        }
        Py_DECREF(fast);
    }
    for (Py_ssize_t i = 1; i < n; i++)
        if (F.score[i] > F.score[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "players must come in pairing order (score descending)");
            goto done;
        }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = dutch_pair(&F, result);
    Py_END_ALLOW_THREADS
    if (rc == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc == -2) {
        PyErr_SetString(PyExc_RuntimeError, "the matching met a state its algorithm rules out");
        goto done;
    }
    if (rc == 1) {
        Py_INCREF(Py_None);
        out = Py_None;
        goto done;
    }
    out = PyList_New(n);
    if (!out) goto done;
    for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(out, i, PyLong_FromLong(result[i]));
done:
    free(F.score); free(F.eligible); free(F.pref); free(F.imbalance); free(F.repeated); free(F.strong);
    free(F.float1); free(F.float2); free(F.played); free(F.topscorer); free(F.forbidden); free(result);
    return out;
}

PyDoc_STRVAR(matching_doc,
"max_weight_matching(n, edges, updates) -> list[list[int]]\n"
"\n"
"The matching engine alone, for tests: a maximum-weight matching of n vertices with edges\n"
"(u, v, weight), then, for each update (v, [(u, weight), ...]), the new weights of v's edges\n"
"and the matching again. Returns the mate list (-1 exposed) after the start and each update.");

static PyObject *py_matching(PyObject *self, PyObject *args)
{
    (void)self;
    int n;
    PyObject *edges, *updates;
    if (!PyArg_ParseTuple(args, "iOO", &n, &edges, &updates)) return NULL;
    if (n <= 0) return PyList_New(0);
    int L = 2;
    Matcher *M = matcher_new(n, L);
    if (!M) return PyErr_NoMemory();
    PyObject *out = PyList_New(0);
    limb_t *w = calloc((size_t)n * L, sizeof(limb_t));
    int *us = malloc(sizeof(int) * n);
    limb_t *initial = calloc(L, sizeof(limb_t));
    if (!out || !w || !us || !initial) goto fail;
    for (int v = 0; v < n; v++) M->active[v] = 1;
    PyObject *fast = PySequence_Fast(edges, "edges");
    if (!fast) goto fail;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
        int e[3];
        if (read_ints(PySequence_Fast_GET_ITEM(fast, i), 3, e, "edge")) {
            Py_DECREF(fast);
            goto fail;
        }
        limb_t *a = W2(M, e[0], e[1]), *b2 = W2(M, e[1], e[0]);
        big_zero(a, L);
        big_add_at(a, (uint64_t)e[2], 1, L);
        big_copy(b2, a, L);
    }
    Py_DECREF(fast);
    big_add_at(initial, 1, 40, L);
    big_copy(M->reset_dual, initial, L);
    big_double(M->reset_dual, L);
    matcher_start(M);
    matcher_solve(M);
    for (int round = -1;; round++) {
        PyObject *mates = PyList_New(n);
        if (!mates) goto fail;
        for (int v = 0; v < n; v++) PyList_SET_ITEM(mates, v, PyLong_FromLong(M->mate[v]));
        PyList_Append(out, mates);
        Py_DECREF(mates);
        if (round + 1 >= PySequence_Size(updates)) break;
        PyObject *upd = PySequence_GetItem(updates, round + 1);
        if (!upd) goto fail;
        int v;
        PyObject *list;
        if (!PyArg_ParseTuple(upd, "iO", &v, &list)) {
            Py_DECREF(upd);
            goto fail;
        }
        PyObject *lf = PySequence_Fast(list, "weights");
        Py_DECREF(upd);
        if (!lf) goto fail;
        int c = 0;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(lf); i++) {
            int e[2];
            if (read_ints(PySequence_Fast_GET_ITEM(lf, i), 2, e, "weight")) {
                Py_DECREF(lf);
                goto fail;
            }
            big_zero(w + (size_t)c * L, L);
            big_add_at(w + (size_t)c * L, (uint64_t)e[1], 1, L);
            us[c++] = e[0];
        }
        Py_DECREF(lf);
        matcher_set_edges(M, v, us, w, c);
        matcher_solve(M);
    }
    free(w); free(us); free(initial);
    matcher_free(M);
    return out;
fail:
    free(w); free(us); free(initial);
    matcher_free(M);
    Py_XDECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"pair", py_pair, METH_VARARGS, pair_doc},
    {"max_weight_matching", py_matching, METH_VARARGS, matching_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_dutch_core", "The compiled core of the FIDE Dutch pairing engine.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dutch_core(void) { return PyModule_Create(&module); }
