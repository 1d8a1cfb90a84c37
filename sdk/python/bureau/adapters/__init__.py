"""Agent-loop adapters: a model's computer-tool call in, bureau calls made,
the tool result out, in the model provider's own shapes.

    tool = AnthropicComputer(desktop, display=(1280, 800))
    tools = [tool.definition()]                 # to the Messages API
    result = tool.run(tool_use_block)           # a tool_result block back

    computer = OpenAIComputer(desktop, display=(1280, 800))
    output = computer.run(computer_call_item)   # a computer_call_output item
"""

from .anthropic import AnthropicComputer
from .openai import OpenAIComputer

__all__ = ["AnthropicComputer", "OpenAIComputer"]
