"""The ``%%graph`` cell magic and the ``%graph`` line magic."""

import ast
import time

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from nbgraph.core.graph import Constant, Variable, graph_inputs
from nbgraph.display.view import GraphView

__all__ = ["GraphMagics"]

_LAST = "_nbgraph_last_value_"


def _format_seconds(seconds):
    if seconds < 1e-3:
        return "%.1f us" % (seconds * 1e6)
    if seconds < 1:
        return "%.1f ms" % (seconds * 1e3)
    return "%.2f s" % seconds


@magics_class
class GraphMagics(Magics):
    """Magics that show nbgraph graphs: ``%%graph`` for a cell, ``%graph`` for one expression."""

    @magic_arguments()
    @argument("-o", "--outputs", default=None, metavar="NAMES",
              help="comma-separated names of the Variables to show, e.g. -o z,w "
                   "(default: the Variables the cell's last statement binds, else its "
                   "last expression)")
    @argument("--eval", dest="eval_spec", default=None, metavar="k=v,...",
              help="compile the outputs and show their values for these inputs; each k names "
                   "an input Variable in the namespace, each v is a Python expression, e.g. "
                   "--eval x=2.0,y=[1,2,3] (quote it when it has spaces: "
                   "--eval \"x=2.0, y=[1, 2, 3]\")")
    @argument("--linker", default=None, choices=["py", "c", "cvm", "debug"],
              help="linker used by --eval and --rewrite, e.g. --linker py")
    @argument("--text", action="store_true",
              help="show the dprint text instead of a diagram, e.g. %%%%graph --text")
    @argument("--lr", action="store_true", help="draw left to right (rankdir LR)")
    @argument("--style", default="auto", choices=["auto", "compact", "structure", "dense"],
              help="diagram style, e.g. --style structure for the Apply/Variable/Op/Type "
                   "picture")
    @argument("--no-types", dest="types", action="store_false",
              help="leave types off the variables, e.g. %%%%graph --no-types")
    @argument("--rewrite", action="store_true",
              help="show the graph after the rewrites function() runs, e.g. %%%%graph --rewrite")
    @argument("expr", nargs="*",
              help="(line magic only) the expression to show, e.g. %%graph x + y")
    @line_cell_magic
    def graph(self, line, cell=None):
        """Show nbgraph graphs as diagrams (or text), and optionally evaluate them.

        Cell magic: runs the cell like a normal cell (the names it binds stay
        defined), then shows the Variables it produced::

            %%graph
            x = nt.dvector("x")
            z = (x * 2).sum()

        Line magic: shows one expression::

            %graph z + 1

        Examples of each option::

            %%graph -o z,w            show z and w
            %%graph --eval x=[1,2]    compile and show values for x = [1, 2]
            %%graph --eval "x=[1, 2], y=0.5"   (quote values that contain spaces)
            %%graph --linker py       use the Python linker for --eval/--rewrite
            %%graph --text            dprint text instead of a picture
            %%graph --style structure the seed's Apply/Variable/Op/Type picture
            %%graph --no-types        no types on the variables
            %%graph --rewrite         the graph function() actually runs
        """
        __tracebackhide__ = True
        args = parse_argstring(self.graph, line)
        if cell is not None and args.expr and args.eval_spec is not None:
            # "--eval x=[1, 2]" unquoted: argparse split the value at its spaces
            args.eval_spec = " ".join([args.eval_spec] + args.expr)
            args.expr = []
        eval_pairs = None if args.eval_spec is None else _parse_eval_spec(
            _unquote(args.eval_spec))
        if cell is None:
            source = " ".join(args.expr).strip()
            if not source:
                raise UsageError("%graph needs an expression, e.g. %graph x + y")
            if args.outputs:
                raise UsageError("-o applies to %%graph cells only")
            value = self.shell.ev(source)
            outputs = self._variables_in(value, source)
            names = [source]
        else:
            if args.expr:
                raise UsageError("unexpected text after the %%%%graph options: %r" % (
                    " ".join(args.expr),))
            bound, last_value, has_last, last_label = self._run_cell(cell)
            outputs, names = self._pick_outputs(args, bound, last_value, has_last, last_label)
            if not outputs:
                print("%%graph: the cell produced no nbgraph Variable "
                      "(name one with -o NAME)")
                return None
        self._show(outputs, names, args, eval_pairs)
        return None

    # -- running the cell ----------------------------------------------------
    def _run_cell(self, cell):
        """Execute ``cell`` in the user namespace.

        Returns ``(bound, last_value, has_last, last_label)``: the names the
        last statement binds (when it is an assignment), the value of the last
        expression and whether there is one, and that expression's source.
        """
        __tracebackhide__ = True
        shell = self.shell
        # IPython syntax (%magics, !commands) works in the cell as in any cell;
        # the transformed source keeps the cell's line numbers
        source = shell.transform_cell(cell)
        filename = shell.compile.cache(source, _cell_number(shell), raw_code=cell)
        tree = ast.parse(source, filename=filename)  # a SyntaxError names the cell's line
        tree = shell.transform_ast(tree)
        bound = []
        last_label = None
        has_last = False
        if tree.body:
            last = tree.body[-1]
            if isinstance(last, ast.Expr):
                last_label = " ".join((ast.get_source_segment(source, last.value) or "").split())
                assign = ast.Assign(targets=[ast.Name(id=_LAST, ctx=ast.Store())],
                                    value=last.value)
                tree.body[-1] = ast.copy_location(assign, last)
                ast.fix_missing_locations(tree)
                has_last = True
            elif isinstance(last, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = last.targets if isinstance(last, ast.Assign) else [last.target]
                for target in targets:
                    bound.extend(_names_in_target(target))
        code = compile(tree, filename, "exec")
        ns = shell.user_ns
        exec(code, shell.user_global_ns, ns)  # errors: ordinary tracebacks on the cell's lines
        last_value = ns.pop(_LAST, None) if has_last else None
        return bound, last_value, has_last, last_label

    def _pick_outputs(self, args, bound, last_value, has_last, last_label=None):
        if args.outputs:
            return self._named_outputs(args.outputs)
        if bound:
            return self._bound_outputs(bound)
        if has_last:
            outputs = self._variables_in(last_value, None, strict=False)
            if len(outputs) == 1 and isinstance(last_value, Variable) and last_label:
                return outputs, [last_label]
            return outputs, [repr(v) for v in outputs]
        return [], []

    def _named_outputs(self, spec):
        """The Variables ``-o`` names (``"z,w"``), or a UsageError naming the bad one."""
        ns = self.shell.user_ns
        names = [n.strip() for n in _unquote(spec).replace(" ", ",").split(",") if n.strip()]
        outputs = []
        for name in names:
            if name not in ns:
                raise UsageError("-o: no variable named %r in the namespace" % name)
            value = ns[name]
            if not isinstance(value, Variable):
                raise UsageError("-o: %r is not an nbgraph Variable (it is %s)" % (
                    name, type(value).__name__))
            outputs.append(value)
        return outputs, names

    def _bound_outputs(self, bound):
        """The Variables among the names the cell bound, each once."""
        ns = self.shell.user_ns
        outputs, names = [], []
        for name in bound:
            value = ns.get(name)
            # "z = w = x * 2" binds one Variable twice: show it once
            if isinstance(value, Variable) and not any(value is v for v in outputs):
                outputs.append(value)
                names.append(name)
        return outputs, names

    @staticmethod
    def _variables_in(value, source, strict=True):
        if isinstance(value, Variable):
            return [value]
        if isinstance(value, (list, tuple)) and value and all(
                isinstance(v, Variable) for v in value):
            return list(value)
        if strict:
            raise UsageError("%r is not an nbgraph Variable (it is %s)" % (
                source, type(value).__name__))
        return []

    # -- showing ---------------------------------------------------------
    def _show(self, outputs, names, args, eval_pairs):
        from IPython.display import display

        target = outputs[0] if len(outputs) == 1 else outputs
        drawn = outputs
        if args.rewrite:
            target = self._compile(outputs, args.linker)[0]
            drawn = target.fgraph.outputs
        # outputs are labelled with the names the cell bound (or -o gave)
        labels = {var: name for var, name, out in zip(drawn, names, outputs, strict=False)
                  if name != repr(out)}
        extra = {"rankdir": "LR"} if args.lr else {}
        display(GraphView(target, style=args.style, show_types=args.types,
                          as_text=args.text, labels=labels, **extra))
        if eval_pairs is not None:
            self._evaluate(outputs, names, args, eval_pairs)

    def _compile(self, outputs, linker, inputs=None):
        from nbgraph.linkers.function import function
        from nbgraph.tensor.variable import SharedVariable

        if inputs is None:
            inputs = [v for v in graph_inputs(outputs)
                      if not isinstance(v, (Constant, SharedVariable))]
        start = time.perf_counter()
        fn = function(inputs, list(outputs), linker=linker, on_unused_input="ignore")
        return fn, time.perf_counter() - start

    def _evaluate(self, outputs, names, args, eval_pairs):
        inputs, values = [], []
        for key, expr in eval_pairs:
            var, value = self._eval_value(key, expr, inputs)
            inputs.append(var)
            values.append(value)
        _check_every_input_given(outputs, inputs)
        fn, compile_time = self._compile(outputs, args.linker, inputs=inputs)
        start = time.perf_counter()
        results = fn(*values)
        run_time = time.perf_counter() - start
        for name, value in zip(names, results, strict=True):
            print("%s = %r" % (name, value))
        print("compiled in %s (linker %s), ran in %s" % (
            _format_seconds(compile_time), fn.linker, _format_seconds(run_time)))

    def _eval_value(self, key, expr, given):
        """(the input Variable named ``key``, the value of ``expr``), checked against its type."""
        ns = self.shell.user_ns
        var = ns.get(key)
        if not isinstance(var, Variable):
            raise UsageError("--eval: %r is not an nbgraph Variable in the namespace%s" % (
                key, "" if key not in ns else " (it is %s)" % type(var).__name__))
        if any(var is v for v in given):
            raise UsageError("--eval: %s is given twice" % key)
        try:
            value = eval(compile(ast.Expression(expr), "<--eval %s>" % key, "eval"),
                         self.shell.user_global_ns, ns)
        except Exception as exc:
            raise UsageError("--eval: the value of %s failed: %s: %s" % (
                key, type(exc).__name__, exc)) from None
        try:
            var.type.filter(value)
        except Exception as exc:
            raise UsageError("--eval: the value of %s does not fit its type %s: %s" % (
                key, var.type, " ".join(str(exc).split()))) from None
        return var, value


def _check_every_input_given(outputs, inputs):
    """A UsageError listing the graph's inputs ``--eval`` gave no value."""
    from nbgraph.tensor.variable import SharedVariable

    missing = [v for v in graph_inputs(outputs)
               if not isinstance(v, (Constant, SharedVariable))
               and not any(v is given for given in inputs)]
    if missing:
        raise UsageError("--eval: no value for %s; give every input a value, e.g. "
                         "--eval %s" % (", ".join(repr(v) for v in missing), ",".join(
                             "%s=..." % (v.name or "?") for v in inputs + missing)))


def _cell_number(shell):
    """The number of the cell being run (``In[n]``), for tracebacks naming it.

    IPython 9 counts the cell before running it, so ``shell.execution_count``
    is already the next cell's number; the running cell's result knows its own.
    """
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    number = getattr(result, "execution_count", None)
    return number if isinstance(number, int) else shell.execution_count


def _names_in_target(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        names = []
        for elt in target.elts:
            names.extend(_names_in_target(elt))
        return names
    return []


def _unquote(text):
    """``'"x=[1, 2]"'`` -> ``'x=[1, 2]'``: IPython's argument splitting keeps the quotes."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _parse_eval_spec(spec):
    """``"x=1.0, y=[1, 2]"`` -> [("x", <ast 1.0>), ("y", <ast [1, 2]>)]; UsageError if malformed."""
    hint = "--eval expects name=value pairs separated by commas, e.g. --eval x=2.0,y=[1,2]"
    try:
        call = ast.parse("f(%s)" % spec, mode="eval").body
    except SyntaxError as exc:
        raise UsageError("%s; got %r (%s)" % (hint, spec, exc.msg)) from None
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        raise UsageError("%s; got %r" % (hint, spec))
    if not call.keywords:
        raise UsageError("%s; got nothing" % hint)
    return [(k.arg, k.value) for k in call.keywords]
