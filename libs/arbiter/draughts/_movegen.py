"""Move generation on bitboards: one closure set per variant, built at import.

A position is three ints in the `_board` layout (white pieces, black pieces,
kings) plus the side to move. A raw move is a tuple
``(from_bit, to_bit, captured_mask, crown_bit[, path, captured_in_order])``;
quiet moves have four fields, captures six (`path` holds every landing bit,
starting with the origin). Applying a raw move needs only the first four.

Capture rules shared by every variant (FMJD rules, FMJD-64 rules, WCDF,
FID capture articles): capturing is compulsory and a sequence is played to its end; a piece is
taken at most once and the taken pieces leave the board only when the move is
complete, so they block the rest of the sequence ("Turkish strike").
Sequences reaching the same square from the same origin with the same taken
pieces are ONE move (the FMJD convention), whatever their order. A route is an
order of taken pieces: a flying king that goes straight on to its next piece
takes the same route from whichever square behind the last piece it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arbiter.draughts._board import GEOMETRIES
from arbiter.draughts.variants import Precedence, Rules

RawMove = tuple[Any, ...]  # (from, to, captured, crown[, path, captured_in_order])


@dataclass(frozen=True, slots=True)
class Engine:
    """The move generator of one variant."""

    moves: Callable[[int, int, int, bool], list[RawMove]]
    routes: Callable[[int, int, int, bool], list[RawMove]]
    count: Callable[[int, int, int, bool], int]
    perft: Callable[[int, int, int, bool, int], int]


def apply(white_bb: int, black_bb: int, kings: int, white: bool, mv: RawMove) -> tuple[int, int, int]:
    """The (white, black, kings) boards after raw move `mv` by the side to move."""
    frm, to, cap, crown = mv[0], mv[1], mv[2], mv[3]
    delta = frm ^ to  # 0 when a capture ends on its own origin square
    if white:
        white_bb ^= delta
        black_bb ^= cap
    else:
        black_bb ^= delta
        white_bb ^= cap
    if kings & frm:
        kings ^= delta
    if cap:
        kings ^= kings & cap
    return white_bb, black_bb, kings | crown


def build_engine(rules: Rules, merge_duplicates: bool = True) -> Engine:
    """The move generator for `rules`, as closures over its constant tables.

    `merge_duplicates=False` keeps every route of a capture as its own move, one
    per order in which the pieces are taken: only for checking perft tables
    published under the "duplicates kept" (every route) convention.
    """
    geo = GEOMETRIES[rules.size]
    board = geo.board
    s1 = geo.half
    s2 = s1 + 1
    d1 = 2 * s1
    d2 = 2 * s2
    top = geo.rows[0]
    bottom = geo.rows[-1]
    ray_dl, ray_dr, ray_ur, ray_ul = geo.rays
    flying = rules.flying_kings
    backward = rules.men_capture_backward
    men_take_kings = rules.men_capture_kings
    crown_mid = rules.crown_mid_capture
    precedence = rules.precedence
    both: tuple[int, ...] = (s1, s2)
    none: tuple[int, ...] = ()
    # Men of White move and (when forward-only) capture up, i.e. by right shifts.
    white_left, white_right = (both if backward else none), both
    black_left, black_right = both, (both if backward else none)

    def king_dfs(
        cur: int,
        rem: int,
        occ: int,
        path: tuple[int, ...],
        caps: tuple[int, ...],
        capmask: int,
        crowned: bool,
        out: list[RawMove],
        straight: tuple[int, ...] | None,
    ) -> bool:
        """Flying-king continuations from `cur`; True if any capture was possible.

        A king may stop on any empty square behind the taken piece, except that
        when some of those squares allow the capture to go on it must land on one
        of them (the sequence must be completed, FMJD-64 capture rules; a no-op under
        the majority rule, where the shorter line is dropped anyway).

        `straight` is the direction not to look in: going straight on to the next
        piece is the same route from every square behind the last one taken, so it
        is searched from the nearest of them only and each capture order is found
        once (one route per order of taken pieces, the every-route perft convention).
        """
        p = cur.bit_length() - 1
        found = False
        for rays in (ray_dl, ray_dr):
            if rays is straight:
                continue
            blk = rays[p] & occ
            if not blk:
                continue
            victim = blk & -blk
            if not victim & rem:
                continue
            beyond = rays[victim.bit_length() - 1]
            blk = beyond & occ
            lands = beyond & ((blk & -blk) - 1) if blk else beyond
            if not lands:
                continue
            found = True
            rem2 = rem ^ victim
            caps2 = caps + (victim,)
            mask2 = capmask | victim
            pending = []
            went_on = False
            ahead = None  # the nearest landing square looks straight on too
            while lands:
                land = lands & -lands
                lands ^= land
                path2 = path + (land,)
                if king_dfs(land, rem2, occ, path2, caps2, mask2, crowned, out, ahead):
                    went_on = True
                elif not went_on:
                    pending.append((path[0], land, mask2, land if crowned else 0, path2, caps2))
                ahead = rays
            if not went_on:
                out.extend(pending)
        for rays in (ray_ur, ray_ul):
            if rays is straight:
                continue
            blk = rays[p] & occ
            if not blk:
                continue
            victim = 1 << (blk.bit_length() - 1)
            if not victim & rem:
                continue
            beyond = rays[victim.bit_length() - 1]
            blk = beyond & occ
            lands = beyond & -(1 << blk.bit_length()) if blk else beyond
            if not lands:
                continue
            found = True
            rem2 = rem ^ victim
            caps2 = caps + (victim,)
            mask2 = capmask | victim
            pending = []
            went_on = False
            ahead = None  # the nearest landing square looks straight on too
            while lands:
                land = 1 << (lands.bit_length() - 1)
                lands ^= land
                path2 = path + (land,)
                if king_dfs(land, rem2, occ, path2, caps2, mask2, crowned, out, ahead):
                    went_on = True
                elif not went_on:
                    pending.append((path[0], land, mask2, land if crowned else 0, path2, caps2))
                ahead = rays
            if not went_on:
                out.extend(pending)
        return found

    def jump_dfs(
        cur: int,
        rem: int,
        occ: int,
        free: int,
        left: tuple[int, ...],
        right: tuple[int, ...],
        crown: int,
        path: tuple[int, ...],
        caps: tuple[int, ...],
        capmask: int,
        out: list[RawMove],
    ) -> bool:
        """Short jumps (men, and english/italian kings) from `cur`; True if any."""
        found = False
        for s in left:
            mid = cur << s
            if mid & rem:
                land = mid << s
                if land & free:
                    found = True
                    path2 = path + (land,)
                    caps2 = caps + (mid,)
                    mask2 = capmask | mid
                    if crown_mid and land & crown:
                        # FMJD-64 / Russian rules: a man crowned mid-capture goes on as a king.
                        if not king_dfs(land, rem ^ mid, occ, path2, caps2, mask2, True, out, None):
                            out.append((path[0], land, mask2, land, path2, caps2))
                    elif not jump_dfs(land, rem ^ mid, occ, free, left, right, crown, path2, caps2, mask2, out):
                        out.append((path[0], land, mask2, land & crown, path2, caps2))
        for s in right:
            mid = cur >> s
            if mid & rem:
                land = mid >> s
                if land & free:
                    found = True
                    path2 = path + (land,)
                    caps2 = caps + (mid,)
                    mask2 = capmask | mid
                    if crown_mid and land & crown:
                        if not king_dfs(land, rem ^ mid, occ, path2, caps2, mask2, True, out, None):
                            out.append((path[0], land, mask2, land, path2, caps2))
                    elif not jump_dfs(land, rem ^ mid, occ, free, left, right, crown, path2, caps2, mask2, out):
                        out.append((path[0], land, mask2, land & crown, path2, caps2))
        return found

    def capturing_men(men: int, men_rem: int, empty: int, white: bool) -> int:
        """Men that have at least one capture."""
        if white:
            cand = men & (((men_rem << s1) & (empty << d1)) | ((men_rem << s2) & (empty << d2)))
            if backward:
                cand |= men & (((men_rem >> s1) & (empty >> d1)) | ((men_rem >> s2) & (empty >> d2)))
        else:
            cand = men & (((men_rem >> s1) & (empty >> d1)) | ((men_rem >> s2) & (empty >> d2)))
            if backward:
                cand |= men & (((men_rem << s1) & (empty << d1)) | ((men_rem << s2) & (empty << d2)))
        return cand

    def kings_can_capture(kings: int, opp: int, occ: int, empty: int) -> bool:
        """Whether any of `kings` has a capture."""
        if not flying:
            return bool(
                kings
                & (
                    ((opp >> s1) & (empty >> d1))
                    | ((opp >> s2) & (empty >> d2))
                    | ((opp << s1) & (empty << d1))
                    | ((opp << s2) & (empty << d2))
                )
            )
        while kings:
            k = kings & -kings
            kings ^= k
            p = k.bit_length() - 1
            for rays, s in ((ray_dl, s1), (ray_dr, s2)):
                blk = rays[p] & occ
                if blk:
                    v = blk & -blk
                    if v & opp and (v << s) & empty:
                        return True
            for rays, s in ((ray_ur, s1), (ray_ul, s2)):
                blk = rays[p] & occ
                if blk:
                    v = 1 << (blk.bit_length() - 1)
                    if v & opp and (v >> s) & empty:
                        return True
        return False

    def select(out: list[RawMove], kings: int) -> list[RawMove]:
        """Apply the variant's capture precedence, then merge duplicate sequences."""
        if precedence is Precedence.MAJORITY:
            # FMJD majority rule: the sequence taking the most pieces (a king counts
            # as one) is compulsory; which piece takes is free.
            best = max(m[2].bit_count() for m in out)
            out = [m for m in out if m[2].bit_count() == best]
        elif precedence is Precedence.SPANISH:
            best_sp = max((m[2].bit_count(), (m[2] & kings).bit_count()) for m in out)
            out = [m for m in out if (m[2].bit_count(), (m[2] & kings).bit_count()) == best_sp]
        elif precedence is Precedence.ITALIAN:
            # FID Regolamento tecnico, capo I (FID's "10 regole" 5-9): most pieces,
            # then capture with a king, then most kings taken, then the line
            # meeting a king first; lines still equal are free.
            def key(m: RawMove) -> tuple[int, bool, int, tuple[bool, ...]]:
                return (
                    m[2].bit_count(),
                    bool(m[0] & kings),
                    (m[2] & kings).bit_count(),
                    tuple(bool(c & kings) for c in m[5]),
                )

            best_it = max(key(m) for m in out)
            out = [m for m in out if key(m) == best_it]
        if not merge_duplicates:
            return out
        seen: set[tuple[int, int, int, int]] = set()
        unique = []
        for m in out:
            k = (m[0], m[1], m[2], m[3])
            if k not in seen:
                seen.add(k)
                unique.append(m)
        return unique

    def captures(own: int, opp: int, kings: int, white: bool, raw: bool = False) -> list[RawMove]:
        """Every legal capture of the side owning `own` (empty list if none).

        With `raw`, every complete route instead, before precedence and merging.
        """
        occ_all = own | opp
        empty = board ^ occ_all
        own_kings = own & kings
        men = own ^ own_kings
        men_rem = opp if men_take_kings else opp ^ (opp & kings)
        out: list[RawMove] = []
        if men and men_rem:
            cand = capturing_men(men, men_rem, empty, white)
            if cand:
                if white:
                    left, right, crown = white_left, white_right, top
                else:
                    left, right, crown = black_left, black_right, bottom
                while cand:
                    frm = cand & -cand
                    cand ^= frm
                    jump_dfs(frm, men_rem, occ_all ^ frm, empty | frm, left, right, crown, (frm,), (), 0, out)
        ks = own_kings
        while ks:
            frm = ks & -ks
            ks ^= frm
            if flying:
                king_dfs(frm, opp, occ_all ^ frm, (frm,), (), 0, False, out, None)
            else:
                jump_dfs(frm, opp, occ_all ^ frm, empty | frm, both, both, 0, (frm,), (), 0, out)
        if len(out) > 1 and not raw:
            out = select(out, kings)
        return out

    def quiets(own: int, opp: int, kings: int, white: bool) -> list[RawMove]:
        """Every non-capturing move of the side owning `own`."""
        occ = own | opp
        empty = board ^ occ
        own_kings = own & kings
        men = own ^ own_kings
        out: list[RawMove] = []
        if men:
            if white:
                for s in both:
                    t = (men >> s) & empty
                    while t:
                        to = t & -t
                        t ^= to
                        out.append((to << s, to, 0, to & top))
            else:
                for s in both:
                    t = (men << s) & empty
                    while t:
                        to = t & -t
                        t ^= to
                        out.append((to >> s, to, 0, to & bottom))
        ks = own_kings
        if flying:
            while ks:
                frm = ks & -ks
                ks ^= frm
                p = frm.bit_length() - 1
                for rays in (ray_dl, ray_dr):
                    ray = rays[p]
                    blk = ray & occ
                    t = ray & ((blk & -blk) - 1) if blk else ray
                    while t:
                        to = t & -t
                        t ^= to
                        out.append((frm, to, 0, 0))
                for rays in (ray_ur, ray_ul):
                    ray = rays[p]
                    blk = ray & occ
                    t = ray & -(1 << blk.bit_length()) if blk else ray
                    while t:
                        to = 1 << (t.bit_length() - 1)
                        t ^= to
                        out.append((frm, to, 0, 0))
        elif ks:
            for s in both:
                t = (ks << s) & empty
                while t:
                    to = t & -t
                    t ^= to
                    out.append((to >> s, to, 0, 0))
                t = (ks >> s) & empty
                while t:
                    to = t & -t
                    t ^= to
                    out.append((to << s, to, 0, 0))
        return out

    def moves(white_bb: int, black_bb: int, kings: int, white: bool) -> list[RawMove]:
        """Every legal raw move of the side to move (captures are compulsory)."""
        own, opp = (white_bb, black_bb) if white else (black_bb, white_bb)
        return captures(own, opp, kings, white) or quiets(own, opp, kings, white)

    def routes(white_bb: int, black_bb: int, kings: int, white: bool) -> list[RawMove]:
        """Every complete capture route, duplicates and non-preferred lines included."""
        own, opp = (white_bb, black_bb) if white else (black_bb, white_bb)
        return captures(own, opp, kings, white, True)

    def count(white_bb: int, black_bb: int, kings: int, white: bool) -> int:
        """The number of legal moves, counting quiet moves without listing them."""
        own, opp = (white_bb, black_bb) if white else (black_bb, white_bb)
        occ = own | opp
        empty = board ^ occ
        own_kings = own & kings
        men = own ^ own_kings
        men_rem = opp if men_take_kings else opp ^ (opp & kings)
        if (men and capturing_men(men, men_rem, empty, white)) or (
            own_kings and kings_can_capture(own_kings, opp, occ, empty)
        ):
            return len(captures(own, opp, kings, white))
        n = 0
        if men:
            if white:
                n = ((men >> s1) & empty).bit_count() + ((men >> s2) & empty).bit_count()
            else:
                n = ((men << s1) & empty).bit_count() + ((men << s2) & empty).bit_count()
        if own_kings:
            if flying:
                for s in both:
                    t = (own_kings << s) & empty
                    while t:
                        n += t.bit_count()
                        t = (t << s) & empty
                    t = (own_kings >> s) & empty
                    while t:
                        n += t.bit_count()
                        t = (t >> s) & empty
            else:
                for s in both:
                    n += ((own_kings << s) & empty).bit_count() + ((own_kings >> s) & empty).bit_count()
        return n

    def perft(white_bb: int, black_bb: int, kings: int, white: bool, depth: int) -> int:
        """Leaf nodes at `depth`; the last ply is bulk-counted by `count`."""
        if depth <= 1:
            return count(white_bb, black_bb, kings, white) if depth == 1 else 1
        total = 0
        nxt = not white
        for mv in moves(white_bb, black_bb, kings, white):
            frm, to, cap, crown = mv[0], mv[1], mv[2], mv[3]
            delta = frm ^ to
            if white:
                w, b = white_bb ^ delta, black_bb ^ cap
            else:
                w, b = white_bb ^ cap, black_bb ^ delta
            k = kings
            if k & frm:
                k ^= delta
            if cap:
                k ^= k & cap
            total += perft(w, b, k | crown, nxt, depth - 1)
        return total

    return Engine(moves=moves, routes=routes, count=count, perft=perft)
