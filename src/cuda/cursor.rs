//! One way to walk a pass's tokens: a position in a token slice that answers what is here or a
//! few tokens ahead, steps over what it expects, and knows brackets: how deep each token is
//! ([`Cursor::walk`], the one place the front end counts bracket depth, so a stray closer can
//! never take a count below zero), where a bracket closes or opens, a bracketed list's
//! comma-separated pieces (a call's, a macro's, a template's `<...>`), and where a top-level item
//! ends. The parser and `fold.rs` read with it; the passes that rewrite tokens (`preprocess.rs`,
//! `template.rs`, `coop.rs`) find their brackets and lists with it; and `sketch.rs`, which reads
//! what the front end cannot with tokens of its own (they never fail), splits items and finds
//! its brackets with it too. So "what is the next token", "where does this `(` end" and "where
//! does this item end" have one answer in the front end, and no pass counts `(`, `[` or `{`
//! by hand.

use super::lexer::{Tok, Token};
use crate::diag::Span;

/// What the cursor asks of a token: the lexer's [`Token`], and the sketch's own.
pub trait Lexeme {
    /// Whether this is the punctuation `p`.
    fn is_punct(&self, p: &str) -> bool;
    /// The word this is, if it is one.
    fn word(&self) -> Option<&str>;
    /// For a `>>` that closes two template argument lists at once (`Box<Max<float>>`, as
    /// C++11 reads it), the inner list's `>`, at the same place.
    fn first_of_shift(&self) -> Self;
}

/// Bracket pairs a walk counts: one deeper at an opener of any of them, one out at a closer of
/// any, so a comma or a `;` inside any of them is not at depth 0.
pub type Pairs<'p> = &'p [(&'p str, &'p str)];

/// Parentheses only.
pub const ROUND: Pairs<'static> = &[("(", ")")];
/// Parentheses and square brackets: an expression's nesting.
pub const ROUND_SQUARE: Pairs<'static> = &[("(", ")"), ("[", "]")];
/// Every bracket C has but angles (which are also operators).
pub const ALL: Pairs<'static> = &[("(", ")"), ("[", "]"), ("{", "}")];

/// What a token is to the brackets a walk counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bracket {
    /// It opens one; the step's depth is the depth outside it.
    Open,
    /// It closes the one open; the step's depth is the depth it goes back to.
    Close,
    /// A closer with nothing open since the walk began: the end of a list opened before it
    /// (a call's `)`), or a learner's stray one. The depth stays 0.
    Stray,
    /// Anything else, at the step's depth.
    Not,
}

/// One token of a [`Walk`]: its index, the token, how deep it is and what it is to the brackets.
#[derive(Debug)]
pub struct Step<'a, L> {
    pub at: usize,
    pub tok: &'a L,
    pub depth: usize,
    pub bracket: Bracket,
}

/// The tokens from a cursor's place to the end, each with its bracket depth
/// ([`Cursor::walk`]).
#[derive(Debug)]
pub struct Walk<'a, 'p, L> {
    toks: &'a [L],
    at: usize,
    depth: usize,
    pairs: Pairs<'p>,
}

impl<L> Walk<'_, '_, L> {
    /// How many brackets are open after the tokens walked so far.
    pub fn depth(&self) -> usize {
        self.depth
    }
}

impl<'a, L: Lexeme> Iterator for Walk<'a, '_, L> {
    type Item = Step<'a, L>;

    fn next(&mut self) -> Option<Step<'a, L>> {
        let tok = self.toks.get(self.at)?;
        let at = self.at;
        self.at += 1;
        let (depth, bracket) = if self.pairs.iter().any(|(open, _)| tok.is_punct(open)) {
            self.depth += 1;
            (self.depth - 1, Bracket::Open)
        } else if self.pairs.iter().any(|(_, close)| tok.is_punct(close)) {
            match self.depth.checked_sub(1) {
                Some(d) => {
                    self.depth = d;
                    (d, Bracket::Close)
                }
                None => (0, Bracket::Stray),
            }
        } else {
            (self.depth, Bracket::Not)
        };
        Some(Step { at, tok, depth, bracket })
    }
}

/// Where an item ends, as [`Cursor::item_end`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemEnd {
    /// Just past the `;` at depth 0 that ends a declaration.
    Declaration(usize),
    /// Just past the `}` that closes the item's body.
    Body(usize),
    /// At a token at depth 0 that begins something else (the sketch's preprocessor lines).
    Stopped(usize),
    /// The tokens ran out first; `braces_closed` when every `{` had closed.
    Unfinished { braces_closed: bool },
}

impl Lexeme for Token {
    fn is_punct(&self, p: &str) -> bool {
        Token::is_punct(self, p)
    }

    fn word(&self) -> Option<&str> {
        Token::word(self)
    }

    fn first_of_shift(&self) -> Self {
        Token { tok: Tok::Punct(">"), span: self.span }
    }
}

/// A position in `toks`; `end` is where a message about the end of the input points.
#[derive(Debug)]
pub struct Cursor<'a, L = Token> {
    toks: &'a [L],
    pos: usize,
    end: Span,
}

// By hand: a cursor copies whatever its tokens are (a derive would ask `L: Copy`).
impl<L> Clone for Cursor<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L> Copy for Cursor<'_, L> {}

impl<'a> Cursor<'a> {
    /// At the first of `toks`.
    pub fn new(toks: &'a [Token], end: Span) -> Cursor<'a> {
        Cursor { toks, pos: 0, end }
    }

    /// The token here, if any.
    pub fn peek(&self) -> Option<&'a Tok> {
        self.peek_at(0)
    }

    /// The token `ahead` tokens on, if any.
    pub fn peek_at(&self, ahead: usize) -> Option<&'a Tok> {
        self.toks.get(self.pos + ahead).map(|t| &t.tok)
    }

    /// The token before this one, if any.
    pub fn peek_back(&self) -> Option<&'a Tok> {
        self.pos.checked_sub(1).and_then(|i| self.toks.get(i)).map(|t| &t.tok)
    }

    /// Where the token here is (the end of the input past the last one).
    pub fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(self.end, |t| t.span)
    }

    /// Where the token just read is (the first token's place before any is read).
    pub fn prev_span(&self) -> Span {
        if self.pos == 0 { self.span() } else { self.toks[self.pos - 1].span }
    }
}

impl<'a, L: Lexeme> Cursor<'a, L> {
    /// At `toks[pos]`, for a pass that walks by index and asks the cursor's questions there.
    pub fn at(toks: &'a [L], pos: usize) -> Cursor<'a, L> {
        Cursor { toks, pos, end: Span::default() }
    }

    /// The index of the token here.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Go back (or on) to index `pos`, saved from [`Cursor::pos`].
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// Every token has been read.
    pub fn done(&self) -> bool {
        self.pos >= self.toks.len()
    }

    /// Past the last token.
    pub fn to_end(&mut self) {
        self.pos = self.toks.len();
    }

    /// Step over `n` tokens.
    pub fn advance(&mut self, n: usize) {
        self.pos += n;
    }

    /// Whether the token here is the punctuation `p`.
    pub fn is(&self, p: &str) -> bool {
        self.toks.get(self.pos).is_some_and(|t| t.is_punct(p))
    }

    /// Whether the token `ahead` tokens on is the punctuation `p`.
    pub fn is_at(&self, ahead: usize, p: &str) -> bool {
        self.toks.get(self.pos + ahead).is_some_and(|t| t.is_punct(p))
    }

    /// Whether the token here is the word `w`.
    pub fn is_word(&self, w: &str) -> bool {
        self.word_at(0) == Some(w)
    }

    /// The word `ahead` tokens on, if it is one.
    pub fn word_at(&self, ahead: usize) -> Option<&'a str> {
        self.toks.get(self.pos + ahead).and_then(|t| t.word())
    }

    /// Step over the punctuation `p` if it is here.
    pub fn eat(&mut self, p: &str) -> bool {
        let here = self.is(p);
        if here {
            self.pos += 1;
        }
        here
    }

    /// Step over the word `w` if it is here.
    pub fn eat_word(&mut self, w: &str) -> bool {
        let here = self.is_word(w);
        if here {
            self.pos += 1;
        }
        here
    }

    /// Every token from here on with its depth in the brackets of `pairs`.
    pub fn walk<'p>(&self, pairs: Pairs<'p>) -> Walk<'a, 'p, L> {
        Walk { toks: self.toks, at: self.pos, depth: 0, pairs }
    }

    /// The comma-separated pieces from here, just after an opening bracket, to the `close` that
    /// matches it (brackets of `pairs`, which holds `close`'s, nest; a comma inside them is part
    /// of a piece; a closer of another pair with nothing open is part of a piece too), and the
    /// index just past the `close`; `None` when it never closes. `()` is one empty piece (a
    /// macro's one empty argument); [`Cursor::arguments`] reads it as none.
    pub fn pieces(&self, close: &str, pairs: Pairs<'_>) -> Option<(Vec<Vec<L>>, usize)>
    where
        L: Clone,
    {
        let mut pieces = vec![Vec::new()];
        for s in self.walk(pairs) {
            match s.bracket {
                Bracket::Stray if s.tok.is_punct(close) => return Some((pieces, s.at + 1)),
                Bracket::Not if s.depth == 0 && s.tok.is_punct(",") => {
                    pieces.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            pieces.last_mut().expect("one at least").push(s.tok.clone());
        }
        None
    }

    /// A call's arguments, as [`Cursor::pieces`] splits them, with `()` read as no arguments.
    pub fn arguments(&self, close: &str, pairs: Pairs<'_>) -> Option<(Vec<Vec<L>>, usize)>
    where
        L: Clone,
    {
        self.pieces(close, pairs).map(|(pieces, past)| (none_if_empty(pieces), past))
    }

    /// Template arguments, from here, just after a `<`, to the `>` that closes it: split at
    /// commas outside brackets, angle brackets nesting only outside parentheses (where `<` and
    /// `>` compare), and a `>>` closing two lists at once when one is open inside (C++11's
    /// `Box<Max<float>>`). `<>` is no arguments. On success, the arguments and the index past
    /// the `>`; otherwise the index where the list stopped, unclosed: a `;`, `{` or `}` (no
    /// argument list runs past one) or the end.
    pub fn template_args(&self) -> Result<(Vec<Vec<L>>, usize), usize>
    where
        L: Clone,
    {
        let mut args = vec![Vec::new()];
        let mut angles = 0usize;
        for s in self.walk(ROUND_SQUARE) {
            let t = s.tok;
            if s.bracket == Bracket::Not {
                if t.is_punct(";") || t.is_punct("{") || t.is_punct("}") {
                    return Err(s.at);
                }
                if s.depth == 0 {
                    if t.is_punct("<") {
                        angles += 1;
                    } else if t.is_punct(">") {
                        match angles.checked_sub(1) {
                            Some(a) => angles = a,
                            None => return Ok((none_if_empty(args), s.at + 1)),
                        }
                    } else if t.is_punct(">>") && angles > 0 {
                        args.last_mut().expect("one argument at least").push(t.first_of_shift());
                        return Ok((none_if_empty(args), s.at + 1));
                    } else if t.is_punct(",") && angles == 0 {
                        args.push(Vec::new());
                        continue;
                    }
                }
            }
            args.last_mut().expect("one argument at least").push(t.clone());
        }
        Err(self.toks.len())
    }

    /// From an `open` bracket here, the index just past the `close` that matches it (brackets
    /// of that pair nest); `None` when it never closes.
    pub fn closing(&self, open: &str, close: &str) -> Option<usize> {
        if !self.is(open) {
            return None;
        }
        let pair = [(open, close)];
        self.walk(&pair).find(|s| s.bracket == Bracket::Close && s.depth == 0).map(|s| s.at + 1)
    }

    /// From a `close` bracket here, the index of the `open` that it closes, looking back
    /// (brackets of that pair nest); `None` when none does.
    pub fn opening(&self, open: &str, close: &str) -> Option<usize> {
        if !self.is(close) {
            return None;
        }
        let mut depth = 0usize;
        for i in (0..=self.pos).rev() {
            let t = &self.toks[i];
            if t.is_punct(close) {
                depth += 1;
            } else if t.is_punct(open) {
                // Never below zero: the walk began at a closer, so one is counted.
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
        }
        None
    }

    /// The first bracket of `pairs` from here on that is out of place, matching each closer
    /// with the innermost open bracket of its own kind; `None` when all pair up.
    pub fn unbalanced(&self, pairs: Pairs<'_>) -> Option<Unbalanced> {
        let mut open: Vec<(usize, usize)> = Vec::new();
        for (at, t) in self.toks.iter().enumerate().skip(self.pos) {
            if let Some(k) = pairs.iter().position(|(o, _)| t.is_punct(o)) {
                open.push((at, k));
            } else if let Some(k) = pairs.iter().position(|(_, c)| t.is_punct(c)) {
                match open.pop() {
                    Some((_, inner)) if inner == k => {}
                    Some((inner_at, _)) => return Some(Unbalanced::NeverClosed(inner_at)),
                    None => return Some(Unbalanced::ClosesNothing(at)),
                }
            }
        }
        open.pop().map(|(at, _)| Unbalanced::NeverClosed(at))
    }

    /// Where the top-level item that starts here ends (depth counted over `(`, `[` and `{`):
    /// past a `;` at depth 0; past a `}` back at depth 0 when `body_ends`, given the item's
    /// head (its tokens before the first `{` at depth 0), says those braces are its body (a
    /// function's, not a struct's, whose declaration goes on to its `;`); at a token at depth 0
    /// that `stop` says begins something else; or at the end of the tokens.
    pub fn item_end(&self, body_ends: impl Fn(&[L]) -> bool, stop: impl Fn(&L) -> bool) -> ItemEnd {
        let mut first_brace = None;
        let mut braces = 0usize;
        for s in self.walk(ALL) {
            let t = s.tok;
            if s.bracket == Bracket::Not && s.depth == 0 && stop(t) {
                return ItemEnd::Stopped(s.at);
            }
            if t.is_punct("{") {
                braces += 1;
                if s.depth == 0 {
                    first_brace.get_or_insert(s.at);
                }
            } else if t.is_punct("}") {
                braces = braces.saturating_sub(1);
                if s.depth == 0 && body_ends(&self.toks[self.pos..first_brace.unwrap_or(s.at)]) {
                    return ItemEnd::Body(s.at + 1);
                }
            } else if t.is_punct(";") && s.depth == 0 {
                return ItemEnd::Declaration(s.at + 1);
            }
        }
        ItemEnd::Unfinished { braces_closed: braces == 0 }
    }
}

/// The first bracket out of place, as [`Cursor::unbalanced`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unbalanced {
    /// The closer at this index closes nothing.
    ClosesNothing(usize),
    /// The opener at this index is never closed: the tokens end, or a closer of another kind
    /// comes while it is the innermost open (the `}` after `f( {}` belongs further out).
    NeverClosed(usize),
}

/// A list whose one piece is empty, `()` or `<>`, read as no pieces.
fn none_if_empty<L>(mut pieces: Vec<Vec<L>>) -> Vec<Vec<L>> {
    if let [only] = &pieces[..]
        && only.is_empty()
    {
        pieces.clear();
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::lexer::lex;

    #[test]
    fn a_bracket_closes_past_the_brackets_nested_in_it() {
        let toks = lex(0, "f(a, (b, c), d[1]) + g").unwrap();
        let at_open = Cursor::at(&toks, 1);
        assert_eq!(at_open.closing("(", ")"), Some(15));
        assert_eq!(Cursor::at(&toks, 0).closing("(", ")"), None, "not at a bracket");
        let unclosed = lex(0, "f(a, (b)").unwrap();
        assert_eq!(Cursor::at(&unclosed, 1).closing("(", ")"), None);
        let (pieces, past) = Cursor::at(&toks, 2).pieces(")", ROUND).unwrap();
        let words: Vec<usize> = pieces.iter().map(Vec::len).collect();
        assert_eq!((words, past), (vec![1, 5, 4], 15));
    }

    #[test]
    fn a_walk_counts_depth_and_a_stray_closer_leaves_it_at_zero() {
        let toks = lex(0, ") ( a ] ] )").unwrap();
        let steps: Vec<(usize, Bracket)> =
            Cursor::at(&toks, 0).walk(ROUND_SQUARE).map(|s| (s.depth, s.bracket)).collect();
        assert_eq!(
            steps,
            vec![
                (0, Bracket::Stray),
                (0, Bracket::Open),
                (1, Bracket::Not),
                (0, Bracket::Close),
                (0, Bracket::Stray),
                (0, Bracket::Stray),
            ]
        );
        let mut walk = Cursor::at(&toks, 1).walk(ROUND);
        assert_eq!(walk.by_ref().count(), 5);
        assert_eq!(walk.depth(), 0, "the `)` at the end closes the `(`");
        // An empty list, and one that never closes, have no pieces and no end.
        let toks = lex(0, "f()").unwrap();
        assert_eq!(Cursor::at(&toks, 2).arguments(")", ROUND), Some((vec![], 3)));
        assert_eq!(Cursor::at(&toks, 2).pieces(")", ROUND).map(|(p, _)| p.len()), Some(1));
        assert_eq!(Cursor::at(&toks, 3).pieces(")", ROUND), None);
        assert_eq!(Cursor::at(&[] as &[Token], 0).closing("(", ")"), None);
        // A closer of another kind with nothing open is part of a piece, not the end.
        let toks = lex(0, "(a ], b)").unwrap();
        let (pieces, past) = Cursor::at(&toks, 1).pieces(")", ALL).unwrap();
        assert_eq!((pieces.iter().map(Vec::len).collect::<Vec<_>>(), past), (vec![2, 1], 6));
    }

    #[test]
    fn the_bracket_out_of_place_is_the_one_named() {
        let out = |text: &str| Cursor::at(&lex(0, text).unwrap(), 0).unbalanced(ALL);
        assert_eq!(out("f(a[1], {b}) ;"), None);
        assert_eq!(out(""), None);
        assert_eq!(out("a ) ("), Some(Unbalanced::ClosesNothing(1)));
        assert_eq!(out("{ f( { } }"), Some(Unbalanced::NeverClosed(2)), "the `(`, not the outer `{{`");
        assert_eq!(out("{ a [ b"), Some(Unbalanced::NeverClosed(2)), "the innermost");
    }

    #[test]
    fn template_arguments_nest_angles_outside_parentheses_only() {
        let args = |text: &str| {
            let toks = lex(0, text).unwrap();
            Cursor::at(&toks, 2).template_args().map(|(a, past)| (a.iter().map(Vec::len).collect::<Vec<_>>(), past))
        };
        assert_eq!(args("f<float, 2 * 128>(x)"), Ok((vec![1, 3], 8)));
        // `>>` closes two lists; the inner one's `>` stays with its argument.
        assert_eq!(args("B<M<float>> b;"), Ok((vec![4], 6)));
        // In parentheses `>` compares.
        assert_eq!(args("k<(N > 4), 8>()"), Ok((vec![5, 1], 10)));
        assert_eq!(args("k<>()"), Ok((vec![], 3)));
        // Unclosed: where it stopped.
        assert_eq!(args("k<float; x"), Err(3));
        assert_eq!(args("k<float"), Err(3));
        assert_eq!(args("k<"), Err(2));
        let toks = lex(0, "f<int>(x)").unwrap();
        assert_eq!(Cursor::at(&toks, 3).opening("<", ">"), Some(1));
        assert_eq!(Cursor::at(&toks, 2).opening("<", ">"), None, "not at a `>`");
        let toks = lex(0, "a > b").unwrap();
        assert_eq!(Cursor::at(&toks, 1).opening("<", ">"), None);
    }

    #[test]
    fn an_item_ends_at_its_semicolon_or_its_body() {
        let end = |text: &str| {
            let toks = lex(0, text).unwrap();
            // As the template pass reads items: any braces are a body.
            Cursor::at(&toks, 0).item_end(|_| true, |_| false)
        };
        assert_eq!(end("void f(int a) { if (a) { a; } } int x;"), ItemEnd::Body(16));
        assert_eq!(end("void f(int a); int x;"), ItemEnd::Declaration(7));
        assert_eq!(end("void f(int a) { a;"), ItemEnd::Unfinished { braces_closed: false });
        assert_eq!(end("void f(int a"), ItemEnd::Unfinished { braces_closed: true });
        assert_eq!(end("} x;"), ItemEnd::Body(1), "a stray `}}` ends the item it is in");
        assert_eq!(end(""), ItemEnd::Unfinished { braces_closed: true });
        // A struct's braces are not its end: its declaration goes on to the `;`.
        let toks = lex(0, "struct P { int x; } p = { 1 }; int y;").unwrap();
        let fn_head = |head: &[Token]| head.iter().any(|t| t.is_punct("("));
        assert_eq!(Cursor::at(&toks, 0).item_end(fn_head, |_| false), ItemEnd::Declaration(13));
        assert_eq!(Cursor::at(&toks, 0).item_end(fn_head, |t| t.is_word("p")), ItemEnd::Stopped(7));
    }

    #[test]
    fn the_parser_s_questions_look_ahead_and_step_over_only_what_is_there() {
        let toks = lex(0, "int x ;").unwrap();
        let end = Span { lo: 7, hi: 7, ..toks[2].span };
        let mut c = Cursor::new(&toks, end);
        assert!(c.is_word("int") && c.is_at(2, ";") && c.word_at(1) == Some("x"));
        assert!(!c.eat(";") && c.eat_word("int") && c.pos() == 1);
        c.advance(1);
        assert!(c.eat(";") && c.done());
        assert_eq!((c.span(), c.prev_span()), (end, toks[2].span));
        c.seek(0);
        assert_eq!(c.peek_back(), None);
        assert_eq!(c.peek(), Some(&Tok::Ident("int".into())));
    }
}
