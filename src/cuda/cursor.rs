//! One way to walk a pass's tokens: a position in a token slice that answers what is here or a
//! few tokens ahead, steps over what it expects, and finds where a bracket closes. The parser
//! reads with it; the passes that rewrite tokens (`template.rs`, `coop.rs`) split bracketed
//! argument lists with it; and `sketch.rs`, which reads what the front end cannot with tokens
//! of its own (they never fail), finds its brackets' ends with it too. So "what is the next
//! token" and "where does this `(` end" have one answer in the front end.

use super::lexer::{Tok, Token};
use crate::diag::Span;

/// What the cursor asks of a token: the lexer's [`Token`], and the sketch's own.
pub trait Lexeme {
    /// Whether this is the punctuation `p`.
    fn is_punct(&self, p: &str) -> bool;
    /// The word this is, if it is one.
    fn word(&self) -> Option<&str>;
}

impl Lexeme for Token {
    fn is_punct(&self, p: &str) -> bool {
        Token::is_punct(self, p)
    }

    fn word(&self) -> Option<&str> {
        Token::word(self)
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

    /// The comma-separated pieces from here, just after an `open` bracket, to the `close` that
    /// matches it (brackets of that pair nest; a comma inside them is part of a piece), and the
    /// index just past the `close`; `None` when it never closes.
    pub fn pieces_to(&self, open: &str, close: &str) -> Option<(Vec<Vec<L>>, usize)>
    where
        L: Clone,
    {
        let mut pieces = vec![Vec::new()];
        let mut depth = 0usize;
        for (i, t) in self.toks.iter().enumerate().skip(self.pos) {
            if t.is_punct(open) {
                depth += 1;
            } else if t.is_punct(close) {
                if depth == 0 {
                    return Some((pieces, i + 1));
                }
                depth -= 1;
            } else if t.is_punct(",") && depth == 0 {
                pieces.push(Vec::new());
                continue;
            }
            pieces.last_mut().expect("one at least").push(t.clone());
        }
        None
    }

    /// From an `open` bracket here, the index just past the `close` that matches it (brackets
    /// of that pair nest); `None` when it never closes.
    pub fn closing(&self, open: &str, close: &str) -> Option<usize> {
        if !self.is(open) {
            return None;
        }
        let mut depth = 0usize;
        for (i, t) in self.toks.iter().enumerate().skip(self.pos) {
            if t.is_punct(open) {
                depth += 1;
            } else if t.is_punct(close) {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
        }
        None
    }
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
        let (pieces, past) = Cursor::at(&toks, 2).pieces_to("(", ")").unwrap();
        let words: Vec<usize> = pieces.iter().map(Vec::len).collect();
        assert_eq!((words, past), (vec![1, 5, 4], 15));
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
