package compatsvc

// commandTable is every command the bus serves, by computer-server's name,
// and computer-server's other names for some of them. Each group lives in
// a file of its own: shell.go, files.go, screen.go, mouse.go, keyboard.go,
// clipboard.go, windows.go, accessibility.go, session.go.
func commandTable() map[string]command {
	t := map[string]command{
		// session.go
		"version":      handle(version),
		"authenticate": handle(authenticate),

		// shell.go
		"run_command": handle(runCommand, "command"),

		// files.go
		"file_exists":      handle(fileExists, "path"),
		"directory_exists": handle(directoryExists, "path"),
		"list_dir":         handle(listDir, "path"),
		"read_text":        handle(readText, "path"),
		"write_text":       handle(writeText, "path", "content"),
		"read_bytes":       handle(readBytes, "path"),
		"write_bytes":      handle(writeBytes, "path", "content_b64"),
		"get_file_size":    handle(getFileSize, "path"),
		"delete_file":      handle(deleteFile, "path"),
		"create_dir":       handle(createDir, "path"),
		"delete_dir":       handle(deleteDir, "path"),

		// screen.go
		"screenshot":                handle(screenshot),
		"get_screen_size":           handle(getScreenSize),
		"get_cursor_position":       handle(getCursorPosition),
		"to_screen_coordinates":     handle(sameCoordinates, "x", "y"),
		"to_screenshot_coordinates": handle(sameCoordinates, "x", "y"),

		// mouse.go
		"left_click":       handle(clickWith("left", 1)),
		"right_click":      handle(clickWith("right", 1)),
		"middle_click":     handle(clickWith("middle", 1)),
		"double_click":     handle(clickWith("left", 2)),
		"move_cursor":      handle(moveCursor, "x", "y"),
		"mouse_down":       handle(mouseButton(true)),
		"mouse_up":         handle(mouseButton(false)),
		"drag_to":          handle(dragTo, "x", "y"),
		"drag":             handle(drag, "path"),
		"scroll":           handle(scroll),
		"scroll_up":        handle(scrollBy(-1)),
		"scroll_down":      handle(scrollBy(1)),
		"scroll_direction": handle(scrollDirection, "direction"),

		// keyboard.go
		"type_text": handle(typeText, "text"),
		"press_key": handle(pressKey, "key"),
		"hotkey":    handle(hotkey, "keys"),
		"key_down":  handle(keyHold(true), "key"),
		"key_up":    handle(keyHold(false), "key"),

		// clipboard.go
		"copy_to_clipboard": handle(copyToClipboard),
		"set_clipboard":     handle(setClipboard, "text"),

		// windows.go
		"open":                     handle(open, "target"),
		"launch":                   handle(launch, "app"),
		"get_current_window_id":    handle(currentWindowID),
		"get_application_windows":  handle(applicationWindows, "app"),
		"get_window_name":          handle(windowName, "window_id"),
		"get_window_size":          handle(windowSize, "window_id"),
		"get_window_position":      handle(windowPosition, "window_id"),
		"set_window_size":          handle(setWindowSize, "window_id", "width", "height"),
		"set_window_position":      handle(setWindowPosition, "window_id", "x", "y"),
		"maximize_window":          handle(windowState("maximized"), "window_id"),
		"minimize_window":          handle(windowState("minimized"), "window_id"),
		"activate_window":          handle(activateWindow, "window_id"),
		"close_window":             handle(closeWindow, "window_id"),
		"get_active_window_bounds": handle(activeWindowBounds),
		"get_desktop_environment":  handle(desktopEnvironment),

		// accessibility.go
		"get_accessibility_tree": handle(accessibilityTree),
		"find_element":           handle(findElement),
		"set_wallpaper":          refused("set_wallpaper", "the wallpaper belongs to the desktop environment, which cua-spacesd does not drive; set it with run_command and the environment's own tool"),
		"diorama_cmd":            refused("diorama_cmd", "diorama is computer-server's macOS app compositor; a Space has no equivalent"),
	}
	// computer-server's COMMAND_ALIASES.
	for alias, name := range map[string]string{
		"type": "type_text", "key": "press_key", "tap": "left_click", "click": "left_click",
		"shell": "run_command", "exec": "run_command", "read_file": "read_text", "write_file": "write_text",
		"ls": "list_dir", "mkdir": "create_dir", "rm": "delete_file", "rmdir": "delete_dir",
	} {
		t[alias] = command{alias: name}
	}
	return t
}
